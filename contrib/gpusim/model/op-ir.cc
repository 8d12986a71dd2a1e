#include "ns3/op-ir.h"

#include "ns3/json-writer.h"

#include <simdjson.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace ns3
{
namespace gpusim
{

TraceFormatError::TraceFormatError(const std::string& file, uint64_t line, const std::string& reason)
    : std::runtime_error(file + (line ? ":" + std::to_string(line) : std::string()) + ": " +
                         reason),
      m_file(file),
      m_line(line),
      m_reason(reason)
{
}

namespace
{

struct NamedOpKind
{
    OpKind kind;
    const char* name;
};

const NamedOpKind kOpKindNames[] = {
    {OpKind::HostWork, "host"},
    {OpKind::Kernel, "kernel"},
    {OpKind::Memcpy, "memcpy"},
    {OpKind::Memset, "memset"},
    {OpKind::EventRecord, "event_record"},
    {OpKind::StreamWaitEvent, "stream_wait_event"},
    {OpKind::EventSync, "event_sync"},
    {OpKind::StreamSync, "stream_sync"},
    {OpKind::DeviceSync, "device_sync"},
    {OpKind::StreamCreate, "stream_create"},
    {OpKind::Malloc, "malloc"},
    {OpKind::Free, "free"},
    {OpKind::CommInit, "comm_init"},
    {OpKind::Collective, "coll"},
    {OpKind::ThreadSignal, "signal"},
    {OpKind::ThreadWait, "wait"},
    {OpKind::Marker, "marker"},
};

const char* const kCollNames[] = {"allreduce",
                                  "allgather",
                                  "reducescatter",
                                  "broadcast",
                                  "reduce",
                                  "alltoall",
                                  "send",
                                  "recv"};
const char* const kDataTypeNames[] = {"f32",
                                      "f16",
                                      "bf16",
                                      "f64",
                                      "i8",
                                      "u8",
                                      "i32",
                                      "u32",
                                      "i64",
                                      "u64",
                                      "f8e4m3",
                                      "f8e5m2",
                                      "tf32"};
const uint32_t kDataTypeSizes[] = {4, 2, 2, 8, 1, 1, 4, 4, 8, 8, 1, 1, 4};
const char* const kMemcpyNames[] = {"h2h", "h2d", "d2h", "d2d", "default", "p2p"};
const char* const kPhaseNames[] = {"begin", "end", "instant"};

template <typename E, size_t N>
bool
ParseByTable(const char* const (&table)[N], const std::string& s, E& out)
{
    for (size_t i = 0; i < N; ++i)
    {
        if (s == table[i])
        {
            out = static_cast<E>(i);
            return true;
        }
    }
    return false;
}

/// Reads one op line. Throws TraceFormatError naming file and line.
class LineReader
{
  public:
    LineReader(const std::string& file, uint64_t line, simdjson::dom::object obj)
        : m_file(file),
          m_line(line),
          m_obj(obj)
    {
    }

    [[noreturn]] void Fail(const std::string& why) const
    {
        throw TraceFormatError(m_file, m_line, why);
    }

    bool Has(const char* key) const
    {
        simdjson::dom::element e;
        return m_obj[key].get(e) == simdjson::SUCCESS;
    }

    double Number(const char* key, double def, bool required = false) const
    {
        simdjson::dom::element e;
        if (m_obj[key].get(e) != simdjson::SUCCESS)
        {
            if (required)
            {
                Fail(std::string("missing required field '") + key + "'");
            }
            return def;
        }
        double v;
        if (e.get_double().get(v) == simdjson::SUCCESS)
        {
            return v;
        }
        int64_t i;
        if (e.get_int64().get(i) == simdjson::SUCCESS)
        {
            return static_cast<double>(i);
        }
        uint64_t u;
        if (e.get_uint64().get(u) == simdjson::SUCCESS)
        {
            return static_cast<double>(u);
        }
        Fail(std::string("field '") + key + "' must be a number");
    }

    uint64_t Unsigned(const char* key, uint64_t def, bool required = false) const
    {
        simdjson::dom::element e;
        if (m_obj[key].get(e) != simdjson::SUCCESS)
        {
            if (required)
            {
                Fail(std::string("missing required field '") + key + "'");
            }
            return def;
        }
        uint64_t u;
        if (e.get_uint64().get(u) == simdjson::SUCCESS)
        {
            return u;
        }
        int64_t i;
        if (e.get_int64().get(i) == simdjson::SUCCESS)
        {
            Fail(std::string("field '") + key + "' must not be negative (got " +
                 std::to_string(i) + ")");
        }
        Fail(std::string("field '") + key + "' must be a non-negative integer");
    }

    int64_t Signed(const char* key, int64_t def) const
    {
        simdjson::dom::element e;
        if (m_obj[key].get(e) != simdjson::SUCCESS)
        {
            return def;
        }
        int64_t i;
        if (e.get_int64().get(i) == simdjson::SUCCESS)
        {
            return i;
        }
        Fail(std::string("field '") + key + "' must be an integer");
    }

    /// Unsigned, for a narrower field: at most `max`.
    uint64_t UnsignedAtMost(const char* key, uint64_t def, uint64_t max,
                            bool required = false) const
    {
        const uint64_t u = Unsigned(key, def, required);
        if (u > max)
        {
            Fail(std::string("field '") + key + "' out of range (got " + std::to_string(u) +
                 ", at most " + std::to_string(max) + ")");
        }
        return u;
    }

    /// Signed, for a 32-bit field.
    int32_t Signed32(const char* key, int64_t def) const
    {
        const int64_t i = Signed(key, def);
        if (i < INT32_MIN || i > INT32_MAX)
        {
            Fail(std::string("field '") + key + "' out of range (got " + std::to_string(i) + ")");
        }
        return static_cast<int32_t>(i);
    }

    std::string String(const char* key, const char* def, bool required = false) const
    {
        simdjson::dom::element e;
        if (m_obj[key].get(e) != simdjson::SUCCESS)
        {
            if (required)
            {
                Fail(std::string("missing required field '") + key + "'");
            }
            return def;
        }
        std::string_view sv;
        if (e.get_string().get(sv) != simdjson::SUCCESS)
        {
            Fail(std::string("field '") + key + "' must be a string");
        }
        return std::string(sv);
    }

    std::array<uint32_t, 3> Dim3(const char* key) const
    {
        std::array<uint32_t, 3> d{1, 1, 1};
        simdjson::dom::element e;
        if (m_obj[key].get(e) != simdjson::SUCCESS)
        {
            return d;
        }
        simdjson::dom::array arr;
        if (e.get_array().get(arr) != simdjson::SUCCESS || arr.size() != 3)
        {
            Fail(std::string("field '") + key + "' must be an array of 3 integers");
        }
        size_t i = 0;
        for (auto v : arr)
        {
            uint64_t u;
            if (v.get_uint64().get(u) != simdjson::SUCCESS || u > UINT32_MAX)
            {
                Fail(std::string("field '") + key + "' must hold 3 non-negative integers");
            }
            d[i++] = static_cast<uint32_t>(u);
        }
        return d;
    }

    bool Bool(const char* key, bool def) const
    {
        simdjson::dom::element e;
        if (m_obj[key].get(e) != simdjson::SUCCESS)
        {
            return def;
        }
        bool b;
        if (e.get_bool().get(b) != simdjson::SUCCESS)
        {
            Fail(std::string("field '") + key + "' must be true or false");
        }
        return b;
    }

    simdjson::dom::object Object() const
    {
        return m_obj;
    }

  private:
    const std::string& m_file;
    uint64_t m_line;
    simdjson::dom::object m_obj;
};

/// Kernel fields: launch shape, FLOPs and bytes, an optional GEMM shape.
void
ParseKernelFields(const LineReader& r, Op& op)
{
    op.grid = r.Dim3("grid");
    op.block = r.Dim3("block");
    op.sharedMem = static_cast<uint32_t>(r.UnsignedAtMost("smem", 0, UINT32_MAX));
    op.flops = r.Number("flops", 0);
    op.memBytes = r.Number("mem_bytes", 0);
    simdjson::dom::element g;
    if (r.Object()["gemm"].get(g) == simdjson::SUCCESS)
    {
        simdjson::dom::object go;
        if (g.get_object().get(go) != simdjson::SUCCESS)
        {
            r.Fail("field 'gemm' must be an object");
        }
        LineReader gr(std::string(), 0, go);
        try
        {
            op.gemm.m = gr.Unsigned("m", 0, true);
            op.gemm.n = gr.Unsigned("n", 0, true);
            op.gemm.k = gr.Unsigned("k", 0, true);
            op.gemm.batch = gr.Unsigned("batch", 1);
            op.gemm.smMargin = static_cast<uint32_t>(gr.UnsignedAtMost("sm_margin", 0, UINT32_MAX));
            std::string dt = gr.String("dtype", "bf16");
            if (!ParseDataType(dt, op.gemm.dtype))
            {
                r.Fail("unknown gemm dtype '" + dt + "'");
            }
        }
        catch (const TraceFormatError& e)
        {
            r.Fail("in 'gemm': " + e.Reason());
        }
    }
    if (op.flops < 0 || op.memBytes < 0)
    {
        r.Fail("'flops' and 'mem_bytes' must not be negative");
    }
}

/// Memcpy fields: direction, async flag, the two ranks of a p2p copy.
void
ParseMemcpyFields(const LineReader& r, Op& op)
{
    std::string k = r.String("kind", "default");
    if (!ParseMemcpyKind(k, op.copyKind))
    {
        r.Fail("unknown memcpy kind '" + k + "'");
    }
    op.async = r.Bool("async", true);
    op.srcRank = r.Signed32("src_rank", -1);
    op.dstRank = r.Signed32("dst_rank", -1);
    if ((op.srcRank >= 0 || op.dstRank >= 0) && op.copyKind != MemcpyKind::PeerToPeer)
    {
        r.Fail("'src_rank'/'dst_rank' are for p2p copies only");
    }
    op.staged = r.Bool("staged", false);
    if (op.staged && op.copyKind != MemcpyKind::PeerToPeer)
    {
        r.Fail("'staged' is for p2p copies only");
    }
    if (op.srcRank >= 0 && op.srcRank == op.dstRank)
    {
        r.Fail("a p2p copy needs two different ranks");
    }
}

/// Collective fields: kind, communicator, sequence, size and type, root or peer.
void
ParseCollectiveFields(const LineReader& r, Op& op)
{
    std::string c = r.String("coll", "", true);
    if (!ParseCollKind(c, op.coll))
    {
        r.Fail("unknown collective '" + c + "'");
    }
    op.comm = r.String("comm", "", true);
    op.seq = r.Unsigned("seq", 0);
    op.count = r.Unsigned("count", 0);
    std::string dt = r.String("dtype", "f32");
    if (!ParseDataType(dt, op.dtype) || op.dtype == DataType::TF32)
    {
        r.Fail("unknown dtype '" + dt + "'");
    }
    if (!r.Has("bytes"))
    {
        op.bytes = op.count * DataTypeSize(op.dtype);
    }
    op.root = r.Signed32("root", -1);
    op.peer = r.Signed32("peer", -1);
    op.group = r.Unsigned("group", 0);
    op.flags = static_cast<uint32_t>(r.UnsignedAtMost("flags", 0, kCollOneCopy));
    if ((op.coll == CollKind::Send || op.coll == CollKind::Recv) && op.peer < 0)
    {
        r.Fail("send/recv needs 'peer'");
    }
    if ((op.coll == CollKind::Broadcast || op.coll == CollKind::Reduce) && op.root < 0)
    {
        r.Fail("broadcast/reduce needs 'root'");
    }
}

Op
ParseOpObject(const LineReader& r)
{
    Op op;
    std::string kind = r.String("op", "", true);
    if (!ParseOpKind(kind, op.kind))
    {
        r.Fail("unknown op '" + kind + "'");
    }
    op.thread = static_cast<uint32_t>(r.UnsignedAtMost("t", 0, UINT32_MAX));
    op.cpuUs = r.Number("cpu_us", 0);
    if (op.cpuUs < 0)
    {
        r.Fail("field 'cpu_us' must not be negative");
    }
    op.stream = r.Signed("stream", 0);
    op.name = r.String("name", "");
    op.durUs = r.Number("dur_us", -1);
    op.bytes = r.Unsigned("bytes", 0);
    op.wakeUs = r.Number("wake_us", 0);
    if (op.wakeUs < 0)
    {
        r.Fail("field 'wake_us' must not be negative");
    }
    if (op.wakeUs > 0 && op.kind != OpKind::StreamSync && op.kind != OpKind::EventSync &&
        op.kind != OpKind::DeviceSync && op.kind != OpKind::Memcpy)
    {
        r.Fail("'wake_us' is for blocking calls (stream_sync, event_sync, device_sync, memcpy)");
    }
    switch (op.kind)
    {
    case OpKind::Kernel:
        ParseKernelFields(r, op);
        break;
    case OpKind::Memcpy:
        ParseMemcpyFields(r, op);
        break;
    case OpKind::EventRecord:
    case OpKind::StreamWaitEvent:
    case OpKind::EventSync:
        op.event = r.Unsigned("event", 0, true);
        if (op.kind == OpKind::EventSync)
        {
            op.query = r.Bool("query", false);
        }
        break;
    case OpKind::StreamSync:
        op.query = r.Bool("query", false);
        break;
    case OpKind::StreamCreate:
        if (!r.Has("stream"))
        {
            r.Fail("missing required field 'stream'");
        }
        op.flags = static_cast<uint32_t>(r.UnsignedAtMost("flags", 0, UINT32_MAX));
        op.priority = r.Signed32("priority", 0);
        break;
    case OpKind::Malloc:
        op.bytes = r.Unsigned("bytes", 0, true);
        op.ptr = r.Unsigned("ptr", 0);
        break;
    case OpKind::Free:
        op.ptr = r.Unsigned("ptr", 0, true);
        break;
    case OpKind::CommInit:
        op.comm = r.String("comm", "", true);
        op.nranks = static_cast<int32_t>(r.UnsignedAtMost("nranks", 0, INT32_MAX, true));
        op.commRank = static_cast<int32_t>(r.UnsignedAtMost("rank", 0, INT32_MAX, true));
        if (op.nranks <= 0 || op.commRank >= op.nranks)
        {
            r.Fail("comm_init needs 0 <= rank < nranks");
        }
        break;
    case OpKind::Collective:
        ParseCollectiveFields(r, op);
        break;
    case OpKind::ThreadSignal:
    case OpKind::ThreadWait:
        op.token = r.Unsigned("token", 0, true);
        break;
    case OpKind::HostWork:
        // Live runs: cudaEventElapsedTime(event, end_event) asked of the simulator.
        op.query = r.Bool("query", false);
        if (op.query)
        {
            op.event = r.Unsigned("event", 0, true);
            op.token = r.Unsigned("end_event", 0, true);
        }
        break;
    case OpKind::Marker: {
        std::string p = r.String("phase", "instant");
        if (!ParseByTable(kPhaseNames, p, op.phase))
        {
            r.Fail("unknown marker phase '" + p + "'");
        }
        op.recordedUs = r.Number("rec_us", -1);
        break;
    }
    default:
        break;
    }
    return op;
}

std::string
ReadWholeFile(const std::string& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
    {
        throw TraceFormatError(file, 0, std::string("cannot open: ") + std::strerror(errno));
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string
JoinPath(const std::string& dir, const std::string& name)
{
    if (!name.empty() && name[0] == '/')
    {
        return name;
    }
    return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

} // namespace

const char*
ToString(OpKind k)
{
    for (const auto& n : kOpKindNames)
    {
        if (n.kind == k)
        {
            return n.name;
        }
    }
    return "?";
}

const char*
ToString(CollKind k)
{
    return kCollNames[static_cast<size_t>(k)];
}

const char*
ToString(DataType t)
{
    return kDataTypeNames[static_cast<size_t>(t)];
}

const char*
ToString(MemcpyKind k)
{
    return kMemcpyNames[static_cast<size_t>(k)];
}

bool
ParseOpKind(const std::string& s, OpKind& out)
{
    for (const auto& n : kOpKindNames)
    {
        if (s == n.name)
        {
            out = n.kind;
            return true;
        }
    }
    return false;
}

bool
ParseCollKind(const std::string& s, CollKind& out)
{
    return ParseByTable(kCollNames, s, out);
}

bool
ParseDataType(const std::string& s, DataType& out)
{
    return ParseByTable(kDataTypeNames, s, out);
}

bool
ParseMemcpyKind(const std::string& s, MemcpyKind& out)
{
    return ParseByTable(kMemcpyNames, s, out);
}

uint32_t
DataTypeSize(DataType t)
{
    return kDataTypeSizes[static_cast<size_t>(t)];
}

Op
ParseOpLine(const std::string& line, const std::string& where, uint64_t lineNo)
{
    return ParseOpLine(line.data(), line.size(), where, lineNo);
}

Op
ParseOpLine(const char* line, size_t size, const std::string& where, uint64_t lineNo)
{
    static thread_local simdjson::dom::parser parser;
    simdjson::dom::element doc;
    auto err = parser.parse(line, size, true).get(doc);
    if (err)
    {
        throw TraceFormatError(where, lineNo, std::string("invalid JSON: ") + simdjson::error_message(err));
    }
    simdjson::dom::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS)
    {
        throw TraceFormatError(where, lineNo, "each line must be a JSON object");
    }
    return ParseOpObject(LineReader(where, lineNo, obj));
}

RankTrace
ReadRankTrace(const std::string& file, uint32_t rank)
{
    RankTrace rt;
    rt.rank = rank;
    std::string text = ReadWholeFile(file);
    simdjson::dom::parser parser;
    uint64_t lineNo = 0;
    size_t pos = 0;
    while (pos < text.size())
    {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos)
        {
            end = text.size();
        }
        ++lineNo;
        std::string_view line(text.data() + pos, end - pos);
        pos = end + 1;
        size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string_view::npos)
        {
            continue; // blank lines are allowed
        }
        simdjson::dom::element doc;
        auto err = parser.parse(line.data(), line.size(), true).get(doc);
        if (err)
        {
            throw TraceFormatError(file,
                                   lineNo,
                                   std::string("invalid JSON: ") + simdjson::error_message(err));
        }
        simdjson::dom::object obj;
        if (doc.get_object().get(obj) != simdjson::SUCCESS)
        {
            throw TraceFormatError(file, lineNo, "each line must be a JSON object");
        }
        rt.ops.push_back(ParseOpObject(LineReader(file, lineNo, obj)));
    }
    return rt;
}

JobTrace
ReadJobTrace(const std::string& dir)
{
    return ReadJobTrace(dir, {});
}

JobTrace
ReadJobTrace(const std::string& dir, const std::function<void(JobTrace&, uint32_t)>& onRank)
{
    const std::string manifestPath = JoinPath(dir, "manifest.json");
    std::string text = ReadWholeFile(manifestPath);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    auto err = parser.parse(text).get(doc);
    if (err)
    {
        throw TraceFormatError(manifestPath, 0, std::string("invalid JSON: ") +
                                                    simdjson::error_message(err));
    }
    simdjson::dom::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS)
    {
        throw TraceFormatError(manifestPath, 0, "manifest must be a JSON object");
    }
    LineReader m(manifestPath, 0, obj);
    JobTrace job;
    if (m.String("format", "", true) != "gpusim-trace")
    {
        m.Fail("'format' must be \"gpusim-trace\"");
    }
    job.version = static_cast<uint32_t>(m.UnsignedAtMost("version", 0, UINT32_MAX, true));
    if (job.version != kOpIrVersion)
    {
        m.Fail("unsupported version " + std::to_string(job.version) + " (this reader reads " +
               std::to_string(kOpIrVersion) + ")");
    }
    job.source = m.String("source", "unknown");
    simdjson::dom::object meta;
    if (obj["metadata"].get_object().get(meta) == simdjson::SUCCESS)
    {
        for (auto field : meta)
        {
            std::string_view v;
            if (field.value.get_string().get(v) == simdjson::SUCCESS)
            {
                job.metadata[std::string(field.key)] = std::string(v);
            }
        }
    }
    simdjson::dom::array ranks;
    if (obj["ranks"].get_array().get(ranks) != simdjson::SUCCESS)
    {
        m.Fail("missing required array 'ranks'");
    }
    std::vector<std::pair<uint32_t, std::pair<std::string, std::string>>> entries;
    for (auto r : ranks)
    {
        simdjson::dom::object ro;
        if (r.get_object().get(ro) != simdjson::SUCCESS)
        {
            m.Fail("each entry of 'ranks' must be an object");
        }
        LineReader rr(manifestPath, 0, ro);
        uint32_t rank;
        std::string file;
        try
        {
            rank = static_cast<uint32_t>(rr.UnsignedAtMost("rank", 0, UINT32_MAX, true));
            file = rr.String("file", "", true);
        }
        catch (const TraceFormatError& e)
        {
            m.Fail("in ranks[" + std::to_string(entries.size()) + "]: " + e.Reason());
        }
        entries.push_back({rank, {file, rr.String("device", "")}});
    }
    if (entries.empty())
    {
        m.Fail("'ranks' is empty");
    }
    std::sort(entries.begin(), entries.end());
    std::map<std::string, size_t> parsed; // file -> first rank read from it
    for (size_t i = 0; i < entries.size(); ++i)
    {
        if (entries[i].first != i)
        {
            m.Fail("ranks must be numbered 0.." + std::to_string(entries.size() - 1) +
                   " each once (rank " + std::to_string(entries[i].first) + " is unexpected)");
        }
        // Identical ranks may share one file: parse it once.
        auto [it, fresh] = parsed.emplace(entries[i].second.first, i);
        RankTrace rt = fresh ? ReadRankTrace(JoinPath(dir, entries[i].second.first),
                                             entries[i].first)
                             : job.ranks[it->second];
        rt.rank = entries[i].first;
        rt.device = entries[i].second.second;
        job.ranks.push_back(std::move(rt));
        if (onRank)
        {
            onRank(job, static_cast<uint32_t>(i));
        }
    }
    return job;
}

std::string
OpToJsonLine(const Op& op)
{
    JsonWriter w;
    w.BeginObject();
    w.Key("op").String(ToString(op.kind));
    if (op.thread != 0)
    {
        w.Key("t").Uint(op.thread);
    }
    if (op.cpuUs != 0)
    {
        w.Key("cpu_us").Double(op.cpuUs);
    }
    if (op.stream != 0)
    {
        w.Key("stream").Int(op.stream);
    }
    if (!op.name.empty())
    {
        w.Key("name").String(op.name);
    }
    if (op.durUs >= 0)
    {
        w.Key("dur_us").Double(op.durUs);
    }
    if (op.wakeUs > 0)
    {
        w.Key("wake_us").Double(op.wakeUs);
    }
    switch (op.kind)
    {
    case OpKind::Kernel:
        if (op.grid != std::array<uint32_t, 3>{1, 1, 1})
        {
            w.Key("grid").BeginArray().Uint(op.grid[0]).Uint(op.grid[1]).Uint(op.grid[2]).EndArray();
        }
        if (op.block != std::array<uint32_t, 3>{1, 1, 1})
        {
            w.Key("block")
                .BeginArray()
                .Uint(op.block[0])
                .Uint(op.block[1])
                .Uint(op.block[2])
                .EndArray();
        }
        if (op.sharedMem)
        {
            w.Key("smem").Uint(op.sharedMem);
        }
        if (op.flops > 0)
        {
            w.Key("flops").Double(op.flops);
        }
        if (op.memBytes > 0)
        {
            w.Key("mem_bytes").Double(op.memBytes);
        }
        if (op.gemm.m)
        {
            w.Key("gemm").BeginObject();
            w.Key("m").Uint(op.gemm.m).Key("n").Uint(op.gemm.n).Key("k").Uint(op.gemm.k);
            w.Key("batch").Uint(op.gemm.batch).Key("dtype").String(ToString(op.gemm.dtype));
            if (op.gemm.smMargin)
            {
                w.Key("sm_margin").Uint(op.gemm.smMargin);
            }
            w.EndObject();
        }
        break;
    case OpKind::Memcpy:
        w.Key("kind").String(ToString(op.copyKind)).Key("bytes").Uint(op.bytes);
        if (!op.async)
        {
            w.Key("async").Bool(false);
        }
        if (op.srcRank >= 0 || op.dstRank >= 0)
        {
            w.Key("src_rank").Int(op.srcRank).Key("dst_rank").Int(op.dstRank);
        }
        if (op.staged)
        {
            w.Key("staged").Bool(true);
        }
        break;
    case OpKind::Memset:
        w.Key("bytes").Uint(op.bytes);
        break;
    case OpKind::EventRecord:
    case OpKind::StreamWaitEvent:
    case OpKind::EventSync:
        w.Key("event").Uint(op.event);
        if (op.query)
        {
            w.Key("query").Bool(true);
        }
        break;
    case OpKind::StreamSync:
        if (op.query)
        {
            w.Key("query").Bool(true);
        }
        break;
    case OpKind::StreamCreate:
        if (op.stream == 0)
        {
            w.Key("stream").Int(0);
        }
        w.Key("flags").Uint(op.flags).Key("priority").Int(op.priority);
        break;
    case OpKind::Malloc:
        w.Key("bytes").Uint(op.bytes).Key("ptr").Uint(op.ptr);
        break;
    case OpKind::Free:
        w.Key("ptr").Uint(op.ptr);
        break;
    case OpKind::CommInit:
        w.Key("comm").String(op.comm).Key("nranks").Int(op.nranks).Key("rank").Int(op.commRank);
        break;
    case OpKind::Collective:
        w.Key("coll").String(ToString(op.coll)).Key("comm").String(op.comm);
        w.Key("seq").Uint(op.seq).Key("count").Uint(op.count);
        w.Key("dtype").String(ToString(op.dtype)).Key("bytes").Uint(op.bytes);
        if (op.root >= 0)
        {
            w.Key("root").Int(op.root);
        }
        if (op.peer >= 0)
        {
            w.Key("peer").Int(op.peer);
        }
        if (op.group)
        {
            w.Key("group").Uint(op.group);
        }
        if (op.flags)
        {
            w.Key("flags").Uint(op.flags);
        }
        break;
    case OpKind::ThreadSignal:
    case OpKind::ThreadWait:
        w.Key("token").Uint(op.token);
        break;
    case OpKind::HostWork:
        if (op.query)
        {
            w.Key("query").Bool(true).Key("event").Uint(op.event).Key("end_event").Uint(op.token);
        }
        break;
    case OpKind::Marker:
        w.Key("phase").String(kPhaseNames[static_cast<size_t>(op.phase)]);
        if (op.recordedUs >= 0)
        {
            w.Key("rec_us").Double(op.recordedUs);
        }
        break;
    default:
        break;
    }
    w.EndObject();
    return w.Take();
}

void
WriteJobTrace(const JobTrace& job, const std::string& dir)
{
    for (const auto& r : job.ranks)
    {
        if (r.opsFrom >= 0)
        {
            throw std::runtime_error("rank " + std::to_string(r.rank) +
                                     " shares its ops in memory (ShareIdenticalRanks); such a "
                                     "job cannot be written");
        }
    }
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    {
        throw std::runtime_error("cannot create directory " + dir + ": " + std::strerror(errno));
    }
    std::vector<std::pair<std::string, std::string>> files; // temp -> final
    auto writeFile = [&](const std::string& name, const std::string& content) {
        std::string final = JoinPath(dir, name);
        std::string tmp = final + ".tmp";
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << content;
        out.close();
        if (!out)
        {
            for (auto& f : files)
            {
                std::remove(f.first.c_str());
            }
            std::remove(tmp.c_str());
            throw std::runtime_error("cannot write " + tmp);
        }
        files.push_back({tmp, final});
    };
    JsonWriter m;
    m.BeginObject();
    m.Key("format").String("gpusim-trace").Key("version").Uint(job.version);
    m.Key("source").String(job.source);
    m.Key("ranks").BeginArray();
    for (const auto& r : job.ranks)
    {
        std::string name = "rank-" + std::to_string(r.rank) + ".jsonl";
        std::string body;
        for (const auto& op : r.ops)
        {
            body += OpToJsonLine(op);
            body += '\n';
        }
        writeFile(name, body);
        m.BeginObject().Key("rank").Uint(r.rank).Key("file").String(name);
        m.Key("device").String(r.device).EndObject();
    }
    m.EndArray();
    m.Key("metadata").BeginObject();
    for (const auto& [k, v] : job.metadata)
    {
        m.Key(k).String(v);
    }
    m.EndObject().EndObject();
    writeFile("manifest.json", m.Take() + "\n");
    // Rank files first, manifest last: a reader never sees a manifest without its ranks.
    for (const auto& f : files)
    {
        if (std::rename(f.first.c_str(), f.second.c_str()) != 0)
        {
            throw std::runtime_error("cannot rename " + f.first + ": " + std::strerror(errno));
        }
    }
}

void
WriteJobTrace(const JobTrace& job,
              const std::string& dir,
              const std::function<RankTrace(uint32_t)>& rankAt,
              uint32_t nranks)
{
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    {
        throw std::runtime_error("cannot create directory " + dir + ": " + std::strerror(errno));
    }
    std::vector<std::pair<std::string, std::string>> files; // temp -> final
    auto cleanUp = [&]() {
        for (auto& f : files)
        {
            std::remove(f.first.c_str());
        }
    };
    JsonWriter m;
    m.BeginObject();
    m.Key("format").String("gpusim-trace").Key("version").Uint(job.version);
    m.Key("source").String(job.source);
    m.Key("ranks").BeginArray();
    for (uint32_t i = 0; i <= nranks; ++i)
    {
        std::string name = i < nranks ? "rank-" + std::to_string(i) + ".jsonl" : "manifest.json";
        std::string final = JoinPath(dir, name);
        std::string tmp = final + ".tmp";
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        files.push_back({tmp, final});
        if (i < nranks)
        {
            const RankTrace r = rankAt(i);
            if (r.opsFrom >= 0)
            {
                cleanUp();
                throw std::runtime_error("rank " + std::to_string(i) +
                                         " shares its ops in memory; it cannot be written");
            }
            for (const auto& op : r.ops)
            {
                out << OpToJsonLine(op) << '\n';
            }
            m.BeginObject().Key("rank").Uint(i).Key("file").String(name);
            m.Key("device").String(r.device).EndObject();
        }
        else
        {
            m.EndArray();
            m.Key("metadata").BeginObject();
            for (const auto& [k, v] : job.metadata)
            {
                m.Key(k).String(v);
            }
            m.EndObject().EndObject();
            out << m.Take() << "\n";
        }
        out.close();
        if (!out)
        {
            cleanUp();
            throw std::runtime_error("cannot write " + tmp);
        }
    }
    // Rank files first, manifest last: a reader never sees a manifest without its ranks.
    for (const auto& f : files)
    {
        if (std::rename(f.first.c_str(), f.second.c_str()) != 0)
        {
            throw std::runtime_error("cannot rename " + f.first + ": " + std::strerror(errno));
        }
    }
}

namespace
{

/// ValidateJobTrace's pass over the ranks (each op against what the rank has done so far) and
/// the checks across ranks it gathers for (communicators complete, collectives matching).
class JobTraceCheck
{
  public:
    explicit JobTraceCheck(const JobTrace& job)
        : m_job(job)
    {
    }

    /// The rank's ops in order; records its communicators and collectives.
    void Rank(const RankTrace& r);
    /// Every communicator has all of its ranks.
    void CommunicatorsComplete() const;
    /// Every rank of a communicator calls its collectives alike, and all of them do.
    void CollectivesMatch() const;

  private:
    struct CommInfo
    {
        int32_t nranks = 0;
        std::map<int32_t, uint32_t> members; // comm rank -> global rank
    };

    struct CollKey
    {
        CollKind coll;
        uint64_t count;
        DataType dtype;
        int32_t root;
        uint32_t rank;
    };

    const JobTrace& m_job;
    std::map<std::string, CommInfo> m_comms;
    std::map<std::pair<std::string, uint64_t>, std::vector<CollKey>> m_colls;
};

void
JobTraceCheck::Rank(const RankTrace& r)
{
    const std::string where = "rank " + std::to_string(r.rank);
    if (r.opsFrom >= static_cast<int64_t>(m_job.ranks.size()) ||
        (r.opsFrom >= 0 && m_job.ranks[r.opsFrom].opsFrom >= 0))
    {
        throw TraceFormatError(where, 0, "shares the ops of a rank that has none of its own");
    }
    // A rank sharing another's list: that list, with this rank's own comm_init lines.
    const std::vector<Op>& ops = r.opsFrom >= 0 ? m_job.ranks[r.opsFrom].ops : r.ops;
    size_t ownInits = 0;
    std::set<std::string> joined;
    // A sharing rank's i-th comm_init may name another communicator than the shared
    // list's i-th: the list's collectives on that communicator run on the rank's own.
    std::map<std::string, std::string> renamed;
    for (size_t i = 0; i < ops.size(); ++i)
    {
        auto fail = [&](const std::string& why) {
            throw TraceFormatError(where, i + 1, why);
        };
        const Op* current = &ops[i];
        Op renamedColl;
        if (r.opsFrom >= 0 && current->kind == OpKind::CommInit)
        {
            if (ownInits >= r.ops.size() || r.ops[ownInits].kind != OpKind::CommInit)
            {
                fail("shared op list: comm_init lines do not match this rank's own");
            }
            renamed[current->comm] = r.ops[ownInits].comm;
            current = &r.ops[ownInits++];
        }
        else if (r.opsFrom >= 0 && current->kind == OpKind::Collective &&
                 renamed.count(current->comm))
        {
            renamedColl = *current;
            renamedColl.comm = renamed[current->comm];
            current = &renamedColl;
        }
        const Op& op = *current;
        if (op.kind == OpKind::CommInit)
        {
            CommInfo& c = m_comms[op.comm];
            if (c.nranks && c.nranks != op.nranks)
            {
                fail("communicator " + op.comm + " initialised with nranks " +
                     std::to_string(op.nranks) + " here but " + std::to_string(c.nranks) +
                     " elsewhere");
            }
            c.nranks = op.nranks;
            if (!c.members.emplace(op.commRank, r.rank).second)
            {
                fail("communicator " + op.comm + " rank " + std::to_string(op.commRank) +
                     " claimed by both rank " + std::to_string(c.members[op.commRank]) +
                     " and rank " + std::to_string(r.rank));
            }
            joined.insert(op.comm);
        }
        else if (op.kind == OpKind::Memcpy && (op.srcRank >= 0 || op.dstRank >= 0))
        {
            const auto n = static_cast<int64_t>(m_job.ranks.size());
            if (op.srcRank >= n || op.dstRank >= n)
            {
                fail("p2p copy between ranks " + std::to_string(op.srcRank) + " and " +
                     std::to_string(op.dstRank) + " but the job has " + std::to_string(n) +
                     " ranks");
            }
        }
        else if (op.kind == OpKind::Collective)
        {
            if (!joined.count(op.comm))
            {
                fail(std::string(ToString(op.coll)) + " on communicator " + op.comm +
                     " which this rank has not initialised");
            }
            if (op.coll != CollKind::Send && op.coll != CollKind::Recv)
            {
                m_colls[{op.comm, op.seq}].push_back(
                    {op.coll, op.count, op.dtype, op.root, r.rank});
            }
        }
    }
}

void
JobTraceCheck::CommunicatorsComplete() const
{
    for (const auto& [name, c] : m_comms)
    {
        if (static_cast<int32_t>(c.members.size()) != c.nranks)
        {
            std::string missing;
            for (int32_t k = 0; k < c.nranks; ++k)
            {
                if (!c.members.count(k))
                {
                    missing += (missing.empty() ? "" : ", ") + std::to_string(k);
                }
            }
            throw TraceFormatError("job", 0,
                                   "communicator " + name + " has " + std::to_string(c.nranks) +
                                       " ranks but ranks [" + missing + "] never joined");
        }
    }
}

void
JobTraceCheck::CollectivesMatch() const
{
    for (const auto& [key, parts] : m_colls)
    {
        const CommInfo& c = m_comms.at(key.first);
        const CollKey& a = parts.front();
        for (const auto& b : parts)
        {
            if (b.coll != a.coll || b.count != a.count || b.dtype != a.dtype || b.root != a.root)
            {
                throw TraceFormatError(
                    "job", 0,
                    "collective mismatch on communicator " + key.first + " seq " +
                        std::to_string(key.second) + ": rank " + std::to_string(a.rank) + " calls " +
                        ToString(a.coll) + "(count " + std::to_string(a.count) + ", " +
                        ToString(a.dtype) + ") but rank " + std::to_string(b.rank) + " calls " +
                        ToString(b.coll) + "(count " + std::to_string(b.count) + ", " +
                        ToString(b.dtype) + ")");
            }
        }
        if (static_cast<int32_t>(parts.size()) != c.nranks)
        {
            std::set<uint32_t> present;
            for (const auto& p : parts)
            {
                present.insert(p.rank);
            }
            std::string missing;
            for (const auto& [cr, gr] : c.members)
            {
                if (!present.count(gr))
                {
                    missing += (missing.empty() ? "" : ", ") + std::to_string(gr);
                }
            }
            throw TraceFormatError("job", 0,
                                   std::string(ToString(a.coll)) + " seq " +
                                       std::to_string(key.second) + " on communicator " +
                                       key.first + ": ranks [" + missing + "] never call it");
        }
    }
}

} // namespace

void
ValidateJobTrace(const JobTrace& job)
{
    JobTraceCheck check(job);
    for (const auto& r : job.ranks)
    {
        check.Rank(r);
    }
    check.CommunicatorsComplete();
    check.CollectivesMatch();
}

RankTrace
UnsharedRank(const JobTrace& job, uint32_t r)
{
    const RankTrace& rt = job.ranks.at(r);
    if (rt.opsFrom < 0)
    {
        return rt;
    }
    RankTrace full = job.ranks.at(rt.opsFrom);
    full.rank = r;
    full.opsFrom = -1;
    size_t own = 0;
    struct Renamed
    {
        std::string comm;   //!< this rank's communicator
        int64_t shift = 0;  //!< this rank's comm rank minus the list owner's
        int64_t nranks = 0;
    };
    std::map<std::string, Renamed> renamed; // the list's communicator -> this rank's
    for (Op& op : full.ops)
    {
        if (op.kind == OpKind::CommInit)
        {
            const Op& mine = rt.ops.at(own++);
            renamed[op.comm] = {mine.comm, int64_t(mine.commRank) - op.commRank, mine.nranks};
            op = mine;
        }
        else if (op.kind == OpKind::Collective)
        {
            const Renamed& to = renamed.at(op.comm);
            op.comm = to.comm;
            if ((op.coll == CollKind::Send || op.coll == CollKind::Recv) && op.peer >= 0 &&
                to.nranks > 0)
            {
                // Peers keep their offset from the rank (RankTrace::opsFrom).
                op.peer = static_cast<int32_t>(((op.peer + to.shift) % to.nranks + to.nranks) %
                                               to.nranks);
            }
        }
    }
    return full;
}

} // namespace gpusim
} // namespace ns3
