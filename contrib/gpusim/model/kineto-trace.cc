#include "ns3/kineto-trace.h"

#include "ns3/log.h"

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>

namespace ns3
{
namespace gpusim
{

NS_LOG_COMPONENT_DEFINE("GpusimKinetoTrace");

namespace
{

namespace od = simdjson::ondemand;

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

KinetoCategory
ParseCategory(std::string_view cat)
{
    // Older Kineto versions used "Kernel", "Runtime", "Memcpy", "Memset", "Operator"; ROCm
    // traces keep the cuda_* names but hip_* spellings are accepted too.
    auto eq = [&cat](std::string_view s) {
        if (cat.size() != s.size())
        {
            return false;
        }
        for (size_t i = 0; i < s.size(); ++i)
        {
            if (std::tolower(static_cast<unsigned char>(cat[i])) != s[i])
            {
                return false;
            }
        }
        return true;
    };
    if (eq("cpu_op") || eq("operator"))
    {
        return KinetoCategory::CpuOp;
    }
    if (eq("cuda_runtime") || eq("hip_runtime") || eq("runtime"))
    {
        return KinetoCategory::Runtime;
    }
    if (eq("cuda_driver") || eq("hip_driver") || eq("driver"))
    {
        return KinetoCategory::Driver;
    }
    if (eq("kernel"))
    {
        return KinetoCategory::Kernel;
    }
    if (eq("gpu_memcpy") || eq("memcpy"))
    {
        return KinetoCategory::Memcpy;
    }
    if (eq("gpu_memset") || eq("memset"))
    {
        return KinetoCategory::Memset;
    }
    if (eq("user_annotation"))
    {
        return KinetoCategory::UserAnnotation;
    }
    if (eq("gpu_user_annotation"))
    {
        return KinetoCategory::GpuUserAnnotation;
    }
    if (eq("cuda_sync") || eq("hip_sync"))
    {
        return KinetoCategory::CudaSync;
    }
    return KinetoCategory::Other;
}

KinetoSyncKind
ParseSyncKind(std::string_view s)
{
    if (s == "Stream Sync")
    {
        return KinetoSyncKind::StreamSync;
    }
    if (s == "Event Sync")
    {
        return KinetoSyncKind::EventSync;
    }
    if (s == "Context Sync")
    {
        return KinetoSyncKind::ContextSync;
    }
    if (s == "Stream Wait Event")
    {
        return KinetoSyncKind::StreamWaitEvent;
    }
    return KinetoSyncKind::Unknown;
}

// FNV-1a: deterministic ids for string pids/tids ("Spans", "PyTorch Profiler").
int64_t
HashId(std::string_view s)
{
    uint64_t h = 1469598103934665603ULL;
    for (char c : s)
    {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ULL;
    }
    // Keep it away from real (small, positive) ids.
    return static_cast<int64_t>(h | (1ULL << 62)) * -1;
}

/// Parser state for one document; every failure throws TraceFormatError with a byte offset.
class JsonReader
{
  public:
    JsonReader(const std::string& name, const char* base, size_t len)
        : m_name(name),
          m_base(base),
          m_len(len)
    {
    }

    [[noreturn]] void Fail(uint64_t offset, const std::string& what) const
    {
        throw TraceFormatError(m_name,
                               offset,
                               "offset " + std::to_string(offset) + ": " + what);
    }

    [[noreturn]] void FailJson(od::document& doc, simdjson::error_code e, const std::string& ctx)
    {
        Fail(Location(doc), ctx + "invalid JSON: " + simdjson::error_message(e));
    }

    uint64_t Location(od::document& doc)
    {
        const char* p = nullptr;
        if (doc.current_location().get(p) == simdjson::SUCCESS && p >= m_base &&
            p <= m_base + m_len)
        {
            m_lastOffset = static_cast<uint64_t>(p - m_base);
        }
        else if (m_lastOffset == 0)
        {
            // simdjson has no position for errors found while indexing (e.g. an unclosed
            // string): report the end of the text.
            m_lastOffset = m_len;
        }
        return m_lastOffset;
    }

    void Parse(KinetoTrace& out)
    {
        // One parser per thread, reused: its buffers grow to the largest trace seen, and
        // allocating them afresh for every file cost more than the parse itself.
        static thread_local od::parser parser;
        od::document doc;
        simdjson::padded_string_view view(m_base, m_len, m_len + simdjson::SIMDJSON_PADDING);
        auto err = parser.iterate(view).get(doc);
        if (err)
        {
            Fail(m_len, std::string("invalid JSON: ") + simdjson::error_message(err));
        }
        od::json_type type;
        if ((err = doc.type().get(type)))
        {
            FailJson(doc, err, "");
        }
        if (type == od::json_type::array)
        {
            // Plain Chrome-trace array form: the document is the event list.
            od::array arr;
            if ((err = doc.get_array().get(arr)))
            {
                FailJson(doc, err, "");
            }
            ParseEvents(doc, arr, out);
        }
        else if (type == od::json_type::object)
        {
            ParseRoot(doc, out);
        }
        else
        {
            Fail(Location(doc), "top-level value is neither an object nor an array");
        }
        const char* rest = nullptr;
        if (doc.current_location().get(rest) == simdjson::SUCCESS)
        {
            // simdjson only reports a location while tokens remain.
            Fail(static_cast<uint64_t>(rest - m_base), "trailing content after the JSON document");
        }
        if (!m_sawEvents)
        {
            Fail(0, "no 'traceEvents' array");
        }
    }

  private:
    void ParseRoot(od::document& doc, KinetoTrace& out)
    {
        od::object root;
        simdjson::error_code err = simdjson::SUCCESS;
        if ((err = doc.get_object().get(root)))
        {
            FailJson(doc, err, "");
        }
        for (auto fieldResult : root)
        {
            od::field field;
            if ((err = std::move(fieldResult).get(field)))
            {
                FailJson(doc, err, "");
            }
            std::string_view key;
            if ((err = field.unescaped_key().get(key)))
            {
                FailJson(doc, err, "");
            }
            od::value value = field.value();
            if (key == "traceEvents")
            {
                od::array arr;
                if ((err = value.get_array().get(arr)))
                {
                    FailJson(doc, err, "'traceEvents': ");
                }
                ParseEvents(doc, arr, out);
            }
            else if (key == "distributedInfo")
            {
                ParseDistributedInfo(doc, value, out);
            }
            else if (key == "deviceProperties")
            {
                ParseDeviceProperties(doc, value, out);
            }
            else if (key == "baseTimeNanoseconds")
            {
                double v = 0;
                if ((err = value.get_double().get(v)))
                {
                    FailJson(doc, err, "'baseTimeNanoseconds': ");
                }
                if (!(v >= 0 && v < 9.0e18))
                {
                    Fail(Location(doc), "'baseTimeNanoseconds' out of range");
                }
                out.baseTimeNs = static_cast<int64_t>(v);
            }
            // Everything else (schemaVersion, traceName, ...) is skipped.
        }
    }

    void ParseDistributedInfo(od::document& doc, od::value& value, KinetoTrace& out)
    {
        od::object obj;
        simdjson::error_code err = simdjson::SUCCESS;
        if ((err = value.get_object().get(obj)))
        {
            FailJson(doc, err, "'distributedInfo': ");
        }
        for (auto fieldResult : obj)
        {
            od::field field;
            std::string_view key;
            if ((err = std::move(fieldResult).get(field)) || (err = field.unescaped_key().get(key)))
            {
                FailJson(doc, err, "'distributedInfo': ");
            }
            if (key == "rank" || key == "world_size")
            {
                int64_t v = 0;
                if ((err = field.value().get_int64().get(v)))
                {
                    FailJson(doc, err, "distributedInfo." + std::string(key) + ": ");
                }
                (key == "rank" ? out.rank : out.worldSize) = v;
            }
        }
    }

    void ParseDeviceProperties(od::document& doc, od::value& value, KinetoTrace& out)
    {
        od::array arr;
        simdjson::error_code err = simdjson::SUCCESS;
        if ((err = value.get_array().get(arr)))
        {
            FailJson(doc, err, "'deviceProperties': ");
        }
        for (auto elemResult : arr)
        {
            od::object obj;
            if ((err = elemResult.get_object().get(obj)))
            {
                FailJson(doc, err, "'deviceProperties' entry: ");
            }
            KinetoDeviceProperties dev;
            for (auto fieldResult : obj)
            {
                od::field field;
                std::string_view key;
                if ((err = std::move(fieldResult).get(field)) || (err = field.unescaped_key().get(key)))
                {
                    FailJson(doc, err, "'deviceProperties' entry: ");
                }
                if (key == "name")
                {
                    std::string_view s;
                    if ((err = field.value().get_string().get(s)))
                    {
                        FailJson(doc, err, "deviceProperties.name: ");
                    }
                    dev.name = std::string(s);
                    continue;
                }
                int64_t* target = nullptr;
                int64_t mem = 0;
                if (key == "id")
                {
                    target = &dev.id;
                }
                else if (key == "numSms")
                {
                    target = &dev.numSms;
                }
                else if (key == "computeMajor")
                {
                    target = &dev.computeMajor;
                }
                else if (key == "computeMinor")
                {
                    target = &dev.computeMinor;
                }
                else if (key == "totalGlobalMem")
                {
                    target = &mem;
                }
                if (target)
                {
                    if ((err = field.value().get_int64().get(*target)))
                    {
                        FailJson(doc, err, "deviceProperties." + std::string(key) + ": ");
                    }
                    if (target == &mem)
                    {
                        dev.totalGlobalMem = static_cast<uint64_t>(std::max<int64_t>(0, mem));
                    }
                }
            }
            out.devices.push_back(std::move(dev));
        }
    }

    /// Reads a number that must be integral (ints, or floats with no fraction).
    bool GetInteger(od::value& v, int64_t& out, simdjson::error_code& err)
    {
        od::json_type t;
        if ((err = v.type().get(t)))
        {
            return false;
        }
        if (t == od::json_type::string)
        {
            // ROCm traces write some numeric args as strings ("bytes": "128").
            std::string_view s;
            if ((err = v.get_string().get(s)))
            {
                return false;
            }
            std::string tmp(s);
            char* end = nullptr;
            errno = 0;
            long long n = std::strtoll(tmp.c_str(), &end, 10);
            if (tmp.empty() || *end != '\0' || errno != 0)
            {
                err = simdjson::INCORRECT_TYPE;
                return false;
            }
            out = n;
            return true;
        }
        od::number_type nt;
        if ((err = v.get_number_type().get(nt)))
        {
            return false;
        }
        if (nt == od::number_type::floating_point_number)
        {
            double d = 0;
            if ((err = v.get_double().get(d)))
            {
                return false;
            }
            if (!(std::fabs(d) < 9.0e18))
            {
                err = simdjson::NUMBER_OUT_OF_RANGE;
                return false;
            }
            out = static_cast<int64_t>(d);
            return true;
        }
        if (nt == od::number_type::unsigned_integer)
        {
            uint64_t u = 0;
            if ((err = v.get_uint64().get(u)))
            {
                return false;
            }
            out = static_cast<int64_t>(std::min<uint64_t>(u, INT64_MAX));
            return true;
        }
        err = v.get_int64().get(out);
        return err == simdjson::SUCCESS;
    }

    /// pid/tid: numbers, or strings (numeric strings are parsed, others hashed).
    bool GetId(od::value& v, int64_t& out, simdjson::error_code& err)
    {
        od::json_type t;
        if ((err = v.type().get(t)))
        {
            return false;
        }
        if (t == od::json_type::string)
        {
            std::string_view s;
            if ((err = v.get_string().get(s)))
            {
                return false;
            }
            char* end = nullptr;
            std::string tmp(s);
            errno = 0;
            long long n = std::strtoll(tmp.c_str(), &end, 10);
            out = (!tmp.empty() && *end == '\0' && errno == 0) ? n : HashId(s);
            return true;
        }
        if (t != od::json_type::number)
        {
            err = simdjson::INCORRECT_TYPE;
            return false;
        }
        return GetInteger(v, out, err);
    }

    void ParseShape(od::document& doc, od::value& v, std::array<uint32_t, 3>& out, size_t index)
    {
        od::array arr;
        simdjson::error_code err = simdjson::SUCCESS;
        if ((err = v.get_array().get(arr)))
        {
            FailJson(doc, err, EventCtx(index, "args.grid/block"));
        }
        size_t i = 0;
        for (auto elem : arr)
        {
            int64_t n = 0;
            od::value ev;
            if ((err = elem.get(ev)) || !GetInteger(ev, n, err))
            {
                FailJson(doc, err, EventCtx(index, "args.grid/block"));
            }
            if (i < 3)
            {
                out[i] = static_cast<uint32_t>(std::clamp<int64_t>(n, 0, UINT32_MAX));
            }
            ++i;
        }
    }

    static std::string EventCtx(size_t index, const char* field)
    {
        return "event " + std::to_string(index) + " field '" + field + "': ";
    }

    void ParseArgs(od::document& doc, od::value& v, KinetoEvent& ev, size_t index)
    {
        od::object obj;
        simdjson::error_code err = simdjson::SUCCESS;
        if ((err = v.get_object().get(obj)))
        {
            FailJson(doc, err, EventCtx(index, "args"));
        }
        for (auto fieldResult : obj)
        {
            od::field field;
            std::string_view key;
            if ((err = std::move(fieldResult).get(field)) || (err = field.unescaped_key().get(key)))
            {
                FailJson(doc, err, EventCtx(index, "args"));
            }
            od::value value = field.value();
            int64_t* intTarget = nullptr;
            std::string* strTarget = nullptr;
            switch (key.empty() ? '\0' : key[0])
            {
            case 'b':
                if (key == "bytes")
                {
                    int64_t b = 0;
                    if (!GetInteger(value, b, err))
                    {
                        FailJson(doc, err, EventCtx(index, "args.bytes"));
                    }
                    ev.bytes = static_cast<uint64_t>(std::max<int64_t>(0, b));
                }
                else if (key == "block")
                {
                    ParseShape(doc, value, ev.block, index);
                    ev.hasLaunchShape = true;
                }
                break;
            case 'c':
                if (key == "correlation")
                {
                    intTarget = &ev.correlation;
                }
                else if (key == "cuda_sync_kind")
                {
                    std::string_view s;
                    if ((err = value.get_string().get(s)))
                    {
                        FailJson(doc, err, EventCtx(index, "args.cuda_sync_kind"));
                    }
                    ev.syncKind = ParseSyncKind(s);
                }
                break;
            case 'd':
                if (key == "device")
                {
                    intTarget = &ev.device;
                }
                else if (key == "dtype")
                {
                    strTarget = &ev.coll.dtype;
                }
                break;
            case 'E':
                if (key == "External id")
                {
                    intTarget = &ev.externalId;
                }
                break;
            case 'g':
                if (key == "grid")
                {
                    ParseShape(doc, value, ev.grid, index);
                    ev.hasLaunchShape = true;
                }
                break;
            case 's':
                if (key == "stream")
                {
                    intTarget = &ev.stream;
                }
                break;
            case 'w':
                if (key == "wait_on_stream")
                {
                    intTarget = &ev.waitOnStream;
                }
                else if (key == "wait_on_cuda_event_record_corr_id")
                {
                    intTarget = &ev.waitOnRecordCorrelation;
                }
                else if (key == "wait_on_cuda_event_id")
                {
                    intTarget = &ev.waitOnEventId;
                }
                break;
            case 'C':
                if (key == "Collective name")
                {
                    strTarget = &ev.coll.name;
                    ev.coll.present = true;
                }
                break;
            case 'I':
                if (key == "In msg nelems")
                {
                    intTarget = &ev.coll.inNelems;
                }
                break;
            case 'O':
                if (key == "Out msg nelems")
                {
                    intTarget = &ev.coll.outNelems;
                }
                break;
            case 'G':
                if (key == "Group size")
                {
                    intTarget = &ev.coll.groupSize;
                }
                break;
            case 'P':
                if (key == "Process Group Name")
                {
                    strTarget = &ev.coll.pgName;
                }
                else if (key == "Process Group Ranks")
                {
                    strTarget = &ev.coll.pgRanks;
                }
                break;
            default:
                break;
            }
            if (intTarget)
            {
                if (!GetInteger(value, *intTarget, err))
                {
                    FailJson(doc, err, EventCtx(index, std::string("args." + std::string(key)).c_str()));
                }
            }
            else if (strTarget)
            {
                std::string_view s;
                if ((err = value.get_string().get(s)))
                {
                    FailJson(doc, err, EventCtx(index, std::string("args." + std::string(key)).c_str()));
                }
                strTarget->assign(s.data(), s.size());
            }
        }
    }

    void ParseEvents(od::document& doc, od::array& arr, KinetoTrace& out)
    {
        m_sawEvents = true;
        simdjson::error_code err = simdjson::SUCCESS;
        size_t index = 0;
        KinetoEvent ev;
        for (auto elemResult : arr)
        {
            uint64_t offset = Location(doc);
            od::object obj;
            if ((err = elemResult.get_object().get(obj)))
            {
                FailJson(doc, err, "event " + std::to_string(index) + ": ");
            }
            ev = KinetoEvent();
            ev.offset = offset;
            std::string_view ph;
            std::string_view cat;
            std::string_view name;
            bool hasPh = false;
            bool hasCat = false;
            bool hasName = false;
            bool hasTs = false;
            bool hasDur = false;
            bool hasPid = false;
            bool hasTid = false;
            bool hasId = false;
            double ts = 0;
            double dur = 0;
            int64_t flowId = 0;
            // Args are parsed lazily: their meaning depends on ph/cat, which may come later.
            // Kineto writes ph/cat/name/pid/tid/ts/dur before args, so this is the fast path;
            // otherwise args are parsed anyway and unused values dropped.
            for (auto fieldResult : obj)
            {
                od::field field;
                std::string_view key;
                if ((err = std::move(fieldResult).get(field)) || (err = field.unescaped_key().get(key)))
                {
                    FailJson(doc, err, "event " + std::to_string(index) + ": ");
                }
                od::value value = field.value();
                if (key == "ph")
                {
                    if ((err = value.get_string().get(ph)))
                    {
                        FailJson(doc, err, EventCtx(index, "ph"));
                    }
                    hasPh = true;
                }
                else if (key == "cat")
                {
                    if ((err = value.get_string().get(cat)))
                    {
                        FailJson(doc, err, EventCtx(index, "cat"));
                    }
                    hasCat = true;
                }
                else if (key == "name")
                {
                    if ((err = value.get_string().get(name)))
                    {
                        FailJson(doc, err, EventCtx(index, "name"));
                    }
                    hasName = true;
                }
                else if (key == "ts")
                {
                    if ((err = value.get_double().get(ts)))
                    {
                        FailJson(doc, err, EventCtx(index, "ts") + "not a number: ");
                    }
                    hasTs = true;
                }
                else if (key == "dur")
                {
                    if ((err = value.get_double().get(dur)))
                    {
                        FailJson(doc, err, EventCtx(index, "dur") + "not a number: ");
                    }
                    hasDur = true;
                }
                else if (key == "pid")
                {
                    if (!GetId(value, ev.pid, err))
                    {
                        FailJson(doc, err, EventCtx(index, "pid"));
                    }
                    hasPid = true;
                }
                else if (key == "tid")
                {
                    if (!GetId(value, ev.tid, err))
                    {
                        FailJson(doc, err, EventCtx(index, "tid"));
                    }
                    hasTid = true;
                }
                else if (key == "id")
                {
                    if (!GetId(value, flowId, err))
                    {
                        FailJson(doc, err, EventCtx(index, "id"));
                    }
                    hasId = true;
                }
                else if (key == "args")
                {
                    // Python events carry no args we use; skip them cheaply.
                    if (!(hasCat && cat == "python_function"))
                    {
                        ParseArgs(doc, value, ev, index);
                    }
                }
                // The string_views above point into the parser's string buffer, which stays
                // valid until the next document: safe to keep them until the event is stored.
            }
            if (!hasPh)
            {
                Fail(offset, "event " + std::to_string(index) + ": missing field 'ph'");
            }
            auto missing = [&](const char* f) {
                Fail(offset,
                     "event " + std::to_string(index) + " (ph '" + std::string(ph) +
                         "'): missing field '" + f + "'");
            };
            if (ph == "X")
            {
                if (!hasName)
                {
                    missing("name");
                }
                if (!hasTs)
                {
                    missing("ts");
                }
                if (!hasDur)
                {
                    missing("dur");
                }
                if (!hasPid)
                {
                    missing("pid");
                }
                if (!hasTid)
                {
                    missing("tid");
                }
                if (!(dur >= 0) || !std::isfinite(dur) || !std::isfinite(ts))
                {
                    Fail(offset,
                         "event " + std::to_string(index) + ": negative or invalid duration " +
                             std::to_string(dur));
                }
                m_minTs = std::min(m_minTs, ts);
                ev.category = hasCat ? ParseCategory(cat) : KinetoCategory::Other;
                if (ev.category == KinetoCategory::Other)
                {
                    ++out.ignoredEvents;
                }
                else
                {
                    ev.name.assign(name.data(), name.size());
                    ev.tsUs = ts;
                    ev.durUs = dur;
                    out.events.push_back(std::move(ev));
                }
            }
            else if (ph == "s" || ph == "f")
            {
                if (!hasTs)
                {
                    missing("ts");
                }
                if (!hasId)
                {
                    missing("id");
                }
                if (!hasPid || !hasTid)
                {
                    missing(hasPid ? "tid" : "pid");
                }
                if (!std::isfinite(ts))
                {
                    Fail(offset, "event " + std::to_string(index) + ": invalid ts");
                }
                if (hasCat && cat == "ac2g")
                {
                    KinetoFlow f;
                    f.start = ph == "s";
                    f.id = flowId;
                    f.pid = ev.pid;
                    f.tid = ev.tid;
                    f.tsUs = ts;
                    out.flows.push_back(f);
                }
                else
                {
                    ++out.ignoredEvents;
                }
            }
            else
            {
                // Metadata ("M"), instants ("i") and anything else carry no dependency; check
                // the timestamp when present so garbage does not pass silently.
                if (hasTs && !std::isfinite(ts))
                {
                    Fail(offset, "event " + std::to_string(index) + ": invalid ts");
                }
                ++out.ignoredEvents;
            }
            ++index;
        }
    }

    const std::string& m_name;
    const char* m_base;
    size_t m_len;
    uint64_t m_lastOffset = 0;
    bool m_sawEvents = false;

  public:
    double m_minTs = std::numeric_limits<double>::infinity();
};

bool
EndsWith(std::string_view s, std::string_view suffix)
{
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool
Contains(std::string_view s, std::string_view part)
{
    return s.find(part) != std::string_view::npos;
}

} // namespace

bool
KinetoEvent::IsGpu() const
{
    return category == KinetoCategory::Kernel || category == KinetoCategory::Memcpy ||
           category == KinetoCategory::Memset;
}

bool
KinetoEvent::IsHost() const
{
    return category == KinetoCategory::CpuOp || category == KinetoCategory::Runtime ||
           category == KinetoCategory::Driver;
}

double
KinetoTrace::AbsoluteStartUs() const
{
    if (relativeTime && baseTimeNs >= 0)
    {
        return static_cast<double>(baseTimeNs) / 1000.0 + startUs;
    }
    return startUs;
}

std::string
LoadKinetoText(const std::string& path)
{
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz)
    {
        throw TraceFormatError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    }
    // gzread reads plain files transparently, so .json and .json.gz share this path.
    gzbuffer(gz, 1 << 18);
    std::string text;
    size_t size = 0;
    size_t capacity = 1 << 20;
    text.resize(capacity + simdjson::SIMDJSON_PADDING);
    while (true)
    {
        if (size == capacity)
        {
            capacity *= 2;
            text.resize(capacity + simdjson::SIMDJSON_PADDING);
        }
        size_t want = std::min<size_t>(capacity - size, 1u << 30);
        int n = gzread(gz, &text[size], static_cast<unsigned>(want));
        if (n < 0)
        {
            int code = 0;
            std::string msg = gzerror(gz, &code);
            gzclose(gz);
            throw TraceFormatError(path,
                                   size,
                                   "offset " + std::to_string(size) +
                                       " (uncompressed): corrupt gzip data: " + msg);
        }
        if (n == 0)
        {
            break;
        }
        size += static_cast<size_t>(n);
    }
    int code = Z_OK;
    std::string msg = gzerror(gz, &code);
    gzclose(gz);
    if (code != Z_OK && code != Z_STREAM_END)
    {
        // A truncated gzip member ends with Z_BUF_ERROR ("unexpected end of file").
        throw TraceFormatError(path,
                               size,
                               "offset " + std::to_string(size) +
                                   " (uncompressed): truncated or corrupt gzip: " + msg);
    }
    text.resize(size);
    if (text.capacity() < size + simdjson::SIMDJSON_PADDING)
    {
        text.reserve(size + simdjson::SIMDJSON_PADDING);
    }
    return text;
}

KinetoTrace
ParseKinetoJson(const std::string& json, const std::string& name)
{
    KinetoTrace trace;
    trace.file = name;
    trace.jsonBytes = json.size();
    const std::string* text = &json;
    std::string padded;
    if (json.capacity() < json.size() + simdjson::SIMDJSON_PADDING)
    {
        padded.reserve(json.size() + simdjson::SIMDJSON_PADDING);
        padded = json;
        text = &padded;
    }
    JsonReader reader(name, text->data(), text->size());
    reader.Parse(trace);
    double minTs = reader.m_minTs;
    minTs = std::isfinite(minTs) ? minTs : 0;
    trace.startUs = minTs;
    // New traces: float us relative to baseTimeNanoseconds; old: integer Unix-epoch us.
    trace.relativeTime = trace.baseTimeNs >= 0 || minTs < 1e14;
    for (auto& ev : trace.events)
    {
        ev.tsUs -= minTs;
        if (ev.IsGpu() || ev.category == KinetoCategory::GpuUserAnnotation)
        {
            if (ev.device < 0)
            {
                ev.device = ev.pid;
            }
            if (ev.stream < 0)
            {
                ev.stream = ev.tid;
            }
        }
    }
    for (auto& f : trace.flows)
    {
        f.tsUs -= minTs;
    }
    // Events are often written out of order (GPU activities after CPU ops); sort by start,
    // enclosing (longer) events first, file order last so the result is deterministic.
    std::vector<uint32_t> order(trace.events.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&trace](uint32_t a, uint32_t b) {
        const auto& x = trace.events[a];
        const auto& y = trace.events[b];
        if (x.tsUs != y.tsUs)
        {
            return x.tsUs < y.tsUs;
        }
        return x.durUs > y.durUs;
    });
    bool sorted = true;
    for (size_t i = 0; i < order.size(); ++i)
    {
        if (order[i] != i)
        {
            sorted = false;
            break;
        }
    }
    if (!sorted)
    {
        std::vector<KinetoEvent> events;
        events.reserve(trace.events.size());
        for (uint32_t i : order)
        {
            events.push_back(std::move(trace.events[i]));
        }
        trace.events = std::move(events);
    }
    NS_LOG_INFO("read " << name << ": " << trace.events.size() << " events, "
                        << trace.flows.size() << " flows, rank " << trace.rank);
    return trace;
}

KinetoTrace
ReadKinetoTrace(const std::string& path)
{
    std::string text = LoadKinetoText(path);
    return ParseKinetoJson(text, path);
}

const char*
ToString(CrossStreamMethod m)
{
    switch (m)
    {
    case CrossStreamMethod::None:
        return "none";
    case CrossStreamMethod::CudaSync:
        return "cuda_sync";
    case CrossStreamMethod::Inferred:
        return "inferred";
    case CrossStreamMethod::Mixed:
        return "mixed";
    }
    return "?";
}

const char*
ToString(DepKind k)
{
    switch (k)
    {
    case DepKind::CpuCpu:
        return "cpu_cpu";
    case DepKind::CpuGpu:
        return "cpu_gpu";
    case DepKind::GpuCpu:
        return "gpu_cpu";
    case DepKind::GpuGpu:
        return "gpu_gpu";
    }
    return "?";
}

namespace
{

/// What a runtime/driver call does, from its name (CUDA, HIP and driver spellings).
enum class CallClass : uint8_t
{
    Other,
    EventRecord,
    StreamWaitEvent,
    StreamSync,
    EventSync,
    DeviceSync,
    MemcpySync,
    MemcpyAsync,
};

CallClass
ClassifyCall(std::string_view name)
{
    if (EndsWith(name, "EventRecord") || EndsWith(name, "EventRecordWithFlags") ||
        EndsWith(name, "EventRecord_ptsz") || EndsWith(name, "EventRecordWithFlags_ptsz"))
    {
        return CallClass::EventRecord;
    }
    if (EndsWith(name, "StreamWaitEvent") || EndsWith(name, "StreamWaitEvent_ptsz"))
    {
        return CallClass::StreamWaitEvent;
    }
    if (EndsWith(name, "StreamSynchronize") || EndsWith(name, "StreamSynchronize_ptsz"))
    {
        return CallClass::StreamSync;
    }
    if (EndsWith(name, "EventSynchronize"))
    {
        return CallClass::EventSync;
    }
    if (EndsWith(name, "DeviceSynchronize") || EndsWith(name, "ThreadSynchronize") ||
        EndsWith(name, "CtxSynchronize"))
    {
        return CallClass::DeviceSync;
    }
    if (Contains(name, "Memcpy"))
    {
        return Contains(name, "Async") ? CallClass::MemcpyAsync : CallClass::MemcpySync;
    }
    return CallClass::Other;
}

using StreamKey = std::pair<int64_t, int64_t>; // (device, stream)
using ThreadKey = std::pair<int64_t, int64_t>; // (pid, tid)

/// GPU ops in the order of their launch calls (launch ts, then GPU start), for queries like
/// "last op launched on stream S before time t".
struct LaunchList
{
    std::vector<double> launchTs;
    std::vector<uint32_t> gpu;

    /// Index of the last entry launched at or before t, -1 if none.
    int64_t LastAtOrBefore(double t) const
    {
        auto it = std::upper_bound(launchTs.begin(), launchTs.end(), t);
        return static_cast<int64_t>(it - launchTs.begin()) - 1;
    }

    /// Index of the first entry launched at or after t, -1 if none.
    int64_t FirstAtOrAfter(double t) const
    {
        auto it = std::lower_bound(launchTs.begin(), launchTs.end(), t);
        return it == launchTs.end() ? -1 : static_cast<int64_t>(it - launchTs.begin());
    }
};

} // namespace

KinetoGraph
BuildKinetoGraph(const KinetoTrace& trace, const KinetoGraphOptions& options)
{
    const auto& ev = trace.events;
    const size_t n = ev.size();
    KinetoGraph g;
    g.options = options;
    g.parent.assign(n, -1);
    g.launchOf.assign(n, -1);
    auto addDep = [&g](uint32_t from, uint32_t to, DepKind kind, DepDetail detail) {
        g.deps.push_back(KinetoDependency{from, to, kind, detail});
        switch (kind)
        {
        case DepKind::CpuCpu:
            ++g.counts.cpuCpu;
            break;
        case DepKind::CpuGpu:
            ++g.counts.cpuGpu;
            break;
        case DepKind::GpuCpu:
            ++g.counts.gpuCpu;
            break;
        case DepKind::GpuGpu:
            ++g.counts.gpuGpu;
            break;
        }
    };

    // ---- Host threads: nesting by time containment, program order of top-level ops. ----
    std::map<ThreadKey, std::vector<uint32_t>> threadOps; // host ops (cpu_op/runtime/driver)
    for (uint32_t i = 0; i < n; ++i)
    {
        if (ev[i].IsHost())
        {
            threadOps[{ev[i].pid, ev[i].tid}].push_back(i);
        }
    }
    std::map<ThreadKey, std::vector<uint32_t>> topLevel;
    for (auto& [key, ops] : threadOps)
    {
        std::vector<uint32_t> stack;
        auto& top = topLevel[key];
        for (uint32_t i : ops)
        {
            // Events are sorted by start with enclosing ones first, so a stack suffices; an
            // op starting inside another is its child even if clock rounding lets it overhang.
            while (!stack.empty() && ev[i].tsUs >= ev[stack.back()].EndUs())
            {
                stack.pop_back();
            }
            if (stack.empty())
            {
                if (!top.empty())
                {
                    addDep(top.back(), i, DepKind::CpuCpu, DepDetail::ProgramOrder);
                }
                top.push_back(i);
            }
            else
            {
                g.parent[i] = stack.back();
            }
            stack.push_back(i);
        }
    }

    // ---- Inter-thread gap rule (Chakra): a gap above the threshold waits for the latest op
    // of another thread of the same process that ended inside the gap. ----
    {
        struct EndEntry
        {
            double end;
            ThreadKey thread;
            uint32_t op;
        };
        std::map<int64_t, std::vector<EndEntry>> byPid;
        for (auto& [key, ops] : topLevel)
        {
            for (uint32_t i : ops)
            {
                byPid[key.first].push_back(EndEntry{ev[i].EndUs(), key, i});
            }
        }
        for (auto& [pid, ends] : byPid)
        {
            std::stable_sort(ends.begin(), ends.end(), [](const EndEntry& a, const EndEntry& b) {
                return a.end < b.end;
            });
        }
        for (auto& [key, ops] : topLevel)
        {
            auto& ends = byPid[key.first];
            double prevEnd = 0; // the trace start counts as the end of "nothing yet"
            for (uint32_t i : ops)
            {
                double start = ev[i].tsUs;
                if (start - prevEnd > options.gapThresholdUs)
                {
                    auto it = std::upper_bound(ends.begin(),
                                               ends.end(),
                                               start,
                                               [](double t, const EndEntry& e) { return t < e.end; });
                    while (it != ends.begin())
                    {
                        --it;
                        if (it->end <= prevEnd)
                        {
                            break;
                        }
                        if (it->thread != key)
                        {
                            g.threadLinks.push_back(KinetoThreadLink{it->op, i, prevEnd});
                            if (options.cpuCpu)
                            {
                                addDep(it->op, i, DepKind::CpuCpu, DepDetail::InterThread);
                                ++g.counts.interThread;
                            }
                            break;
                        }
                    }
                }
                prevEnd = std::max(prevEnd, ev[i].EndUs());
            }
        }
    }

    // ---- CPU -> GPU by correlation (flow events as a fallback for a missing correlation). --
    std::unordered_map<int64_t, uint32_t> callByCorrelation;
    std::unordered_map<int64_t, uint32_t> syncByCorrelation;
    for (uint32_t i = 0; i < n; ++i)
    {
        if ((ev[i].category == KinetoCategory::Runtime ||
             ev[i].category == KinetoCategory::Driver) &&
            ev[i].correlation >= 0)
        {
            callByCorrelation.emplace(ev[i].correlation, i);
        }
        else if (ev[i].category == KinetoCategory::CudaSync && ev[i].correlation >= 0)
        {
            syncByCorrelation.emplace(ev[i].correlation, i);
        }
    }
    std::map<std::tuple<int64_t, int64_t, double>, int64_t> flowEnds;
    for (const auto& f : trace.flows)
    {
        if (!f.start)
        {
            flowEnds.emplace(std::make_tuple(f.pid, f.tid, f.tsUs), f.id);
        }
    }
    std::map<StreamKey, LaunchList> streamLaunches;
    std::map<ThreadKey, LaunchList> threadLaunches;
    std::map<StreamKey, std::vector<uint32_t>> streamOps;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (!ev[i].IsGpu())
        {
            continue;
        }
        streamOps[{ev[i].device, ev[i].stream}].push_back(i);
        int64_t corr = ev[i].correlation;
        if (corr < 0)
        {
            auto f = flowEnds.find(std::make_tuple(ev[i].pid, ev[i].tid, ev[i].tsUs));
            if (f != flowEnds.end())
            {
                corr = f->second;
            }
        }
        auto it = callByCorrelation.find(corr);
        if (corr < 0 || it == callByCorrelation.end())
        {
            ++g.orphanGpuOps;
            continue;
        }
        g.launchOf[i] = it->second;
        if (options.cpuGpu)
        {
            addDep(it->second, i, DepKind::CpuGpu, DepDetail::Launch);
        }
    }
    {
        // Launch lists, ordered by launch time then GPU start.
        std::vector<uint32_t> gpu;
        for (uint32_t i = 0; i < n; ++i)
        {
            if (ev[i].IsGpu() && g.launchOf[i] >= 0)
            {
                gpu.push_back(i);
            }
        }
        std::stable_sort(gpu.begin(), gpu.end(), [&](uint32_t a, uint32_t b) {
            return ev[g.launchOf[a]].tsUs < ev[g.launchOf[b]].tsUs;
        });
        for (uint32_t i : gpu)
        {
            const auto& call = ev[g.launchOf[i]];
            auto& s = streamLaunches[{ev[i].device, ev[i].stream}];
            s.launchTs.push_back(call.tsUs);
            s.gpu.push_back(i);
            auto& t = threadLaunches[{call.pid, call.tid}];
            t.launchTs.push_back(call.tsUs);
            t.gpu.push_back(i);
        }
    }

    // ---- GPU -> GPU in stream order. ----
    for (auto& [key, ops] : streamOps)
    {
        for (size_t k = 1; k < ops.size(); ++k)
        {
            addDep(ops[k - 1], ops[k], DepKind::GpuGpu, DepDetail::InStream);
        }
    }

    // Helpers over the launch lists.
    auto lastLaunchOnStream = [&](StreamKey s, double t) -> int64_t {
        auto it = streamLaunches.find(s);
        if (it == streamLaunches.end())
        {
            return -1;
        }
        int64_t k = it->second.LastAtOrBefore(t);
        return k < 0 ? int64_t{-1} : static_cast<int64_t>(it->second.gpu[k]);
    };
    auto firstLaunchOnStream = [&](StreamKey s, double t) -> int64_t {
        auto it = streamLaunches.find(s);
        if (it == streamLaunches.end())
        {
            return -1;
        }
        int64_t k = it->second.FirstAtOrAfter(t);
        return k < 0 ? int64_t{-1} : static_cast<int64_t>(it->second.gpu[k]);
    };
    // Stream of the last GPU op this thread launched before t: the "current stream" that
    // stream-less runtime calls (record, sync) most likely refer to.
    auto currentStream = [&](const KinetoEvent& call, double t, StreamKey& out) -> bool {
        auto it = threadLaunches.find({call.pid, call.tid});
        if (it == threadLaunches.end())
        {
            return false;
        }
        int64_t k = it->second.LastAtOrBefore(t);
        if (k < 0)
        {
            return false;
        }
        const auto& gpu = ev[it->second.gpu[k]];
        out = {gpu.device, gpu.stream};
        return true;
    };
    auto nextStream = [&](const KinetoEvent& call, double t, StreamKey& out) -> bool {
        auto it = threadLaunches.find({call.pid, call.tid});
        if (it == threadLaunches.end())
        {
            return false;
        }
        int64_t k = it->second.FirstAtOrAfter(t);
        if (k < 0)
        {
            return false;
        }
        const auto& gpu = ev[it->second.gpu[k]];
        out = {gpu.device, gpu.stream};
        return true;
    };

    // Classify runtime calls once; records per thread with their inferred stream.
    std::vector<CallClass> cls(n, CallClass::Other);
    struct Record
    {
        uint32_t call;
        StreamKey stream;
    };
    std::map<ThreadKey, std::vector<Record>> records;
    int64_t defaultDevice = trace.devices.empty() ? 0 : trace.devices.front().id;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (ev[i].category != KinetoCategory::Runtime && ev[i].category != KinetoCategory::Driver)
        {
            continue;
        }
        cls[i] = ClassifyCall(ev[i].name);
        if (cls[i] == CallClass::EventRecord)
        {
            StreamKey s{defaultDevice, -1};
            currentStream(ev[i], ev[i].tsUs, s);
            records[{ev[i].pid, ev[i].tid}].push_back(Record{i, s});
        }
    }
    std::unordered_map<uint32_t, StreamKey> recordStreamOf;
    for (auto& [key, list] : records)
    {
        for (auto& r : list)
        {
            recordStreamOf[r.call] = r.stream;
        }
    }

    // ---- GPU -> GPU across streams: record on A, wait on B. ----
    uint64_t fromSync = 0;
    uint64_t inferred = 0;
    for (uint32_t w = 0; w < n; ++w)
    {
        if (cls[w] != CallClass::StreamWaitEvent)
        {
            continue;
        }
        KinetoCrossStreamLink link;
        link.waitCall = w;
        // The latest cudaEventRecord before the wait (same thread first, then the other
        // threads of the process) whose stream satisfies `want`.
        auto findRecord = [&](auto want, int64_t& best, StreamKey& bestStream) {
            auto search = [&](const std::vector<Record>& list) {
                auto it = std::lower_bound(list.begin(),
                                           list.end(),
                                           ev[w].tsUs,
                                           [&](const Record& r, double t) {
                                               return ev[r.call].tsUs < t;
                                           });
                // Bounded walk back keeps this linear on traces with many records.
                for (int steps = 0; it != list.begin() && steps < 256; ++steps)
                {
                    --it;
                    if (it->stream.second >= 0 && want(it->stream))
                    {
                        if (best < 0 || ev[it->call].tsUs > ev[best].tsUs)
                        {
                            best = it->call;
                            bestStream = it->stream;
                        }
                        return;
                    }
                }
            };
            ThreadKey own{ev[w].pid, ev[w].tid};
            auto mine = records.find(own);
            if (mine != records.end())
            {
                search(mine->second);
            }
            if (best < 0)
            {
                for (auto& [key, list] : records)
                {
                    if (key.first == ev[w].pid && key != own)
                    {
                        search(list);
                    }
                }
            }
        };
        StreamKey waitStream;
        int64_t best = -1;
        StreamKey bestStream;
        auto sync = ev[w].correlation >= 0 ? syncByCorrelation.find(ev[w].correlation)
                                           : syncByCorrelation.end();
        const KinetoEvent* cs = sync != syncByCorrelation.end() &&
                                        ev[sync->second].syncKind == KinetoSyncKind::StreamWaitEvent
                                    ? &ev[sync->second]
                                    : nullptr;
        if (cs && cs->stream >= 0 && cs->waitOnStream >= 0)
        {
            // cuda_sync names both streams and (newer Kineto) the record call.
            int64_t dev = cs->device >= 0 ? cs->device : cs->pid;
            waitStream = {dev, cs->stream};
            bestStream = {dev, cs->waitOnStream};
            auto rec = callByCorrelation.find(cs->waitOnRecordCorrelation);
            if (cs->waitOnRecordCorrelation >= 0 && rec != callByCorrelation.end())
            {
                best = rec->second;
            }
            else
            {
                // Older Kineto omits the record's correlation: take the latest record on
                // that stream, else place the record at the wait.
                StreamKey want = bestStream;
                findRecord([&want](const StreamKey& k) { return k == want; }, best, bestStream);
                if (best < 0)
                {
                    best = w;
                    bestStream = want;
                }
            }
            link.fromCudaSync = true;
        }
        else
        {
            // Infer: the waiting stream is the one this thread launches on next; the event is
            // the latest record on a different stream.
            if (!nextStream(ev[w], ev[w].EndUs(), waitStream))
            {
                continue;
            }
            StreamKey notThis = waitStream;
            findRecord([&notThis](const StreamKey& k) { return k != notThis; }, best, bestStream);
            if (best < 0)
            {
                // No record call in the trace (ROCm traces omit hipEventRecord): PyTorch
                // records on the current stream right before waiting, so stand in for it.
                StreamKey cur;
                if (currentStream(ev[w], ev[w].tsUs, cur) && cur != waitStream)
                {
                    best = w;
                    bestStream = cur;
                }
            }
            if (best < 0 || waitStream.first != bestStream.first)
            {
                continue;
            }
        }
        link.recordCall = static_cast<uint32_t>(best);
        link.recordStream = bestStream.second;
        link.waitStream = waitStream.second;
        link.fromGpu = lastLaunchOnStream(bestStream, ev[best].tsUs);
        link.toGpu = firstLaunchOnStream(waitStream, ev[w].tsUs);
        if (link.recordStream == link.waitStream || link.fromGpu < 0)
        {
            continue; // same stream (implied by stream order) or nothing recorded yet
        }
        if (link.toGpu >= 0)
        {
            if (options.gpuGpu)
            {
                addDep(static_cast<uint32_t>(link.fromGpu),
                       static_cast<uint32_t>(link.toGpu),
                       DepKind::GpuGpu,
                       DepDetail::CrossStream);
                ++g.counts.crossStream;
                (link.fromCudaSync ? g.counts.crossStreamFromCudaSync
                                   : g.counts.crossStreamInferred)++;
            }
        }
        (link.fromCudaSync ? fromSync : inferred)++;
        g.crossStream.push_back(link);
    }
    g.crossStreamMethod = fromSync == 0 && inferred == 0 ? CrossStreamMethod::None
                          : inferred == 0               ? CrossStreamMethod::CudaSync
                          : fromSync == 0               ? CrossStreamMethod::Inferred
                                                        : CrossStreamMethod::Mixed;

    // ---- GPU -> CPU: blocking calls wait for the GPU work they name. ----
    std::unordered_map<uint32_t, std::vector<uint32_t>> gpuOfCall;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (g.launchOf[i] >= 0)
        {
            gpuOfCall[static_cast<uint32_t>(g.launchOf[i])].push_back(i);
        }
    }
    for (uint32_t c = 0; c < n; ++c)
    {
        KinetoSyncLink link;
        link.call = c;
        const auto& call = ev[c];
        auto sync = call.correlation >= 0 ? syncByCorrelation.find(call.correlation)
                                          : syncByCorrelation.end();
        const KinetoEvent* cs = sync != syncByCorrelation.end() ? &ev[sync->second] : nullptr;
        int64_t dev = cs && cs->device >= 0 ? cs->device : defaultDevice;
        switch (cls[c])
        {
        case CallClass::StreamSync: {
            link.what = DepDetail::StreamSync;
            StreamKey s{dev, -1};
            if (cs && cs->syncKind == KinetoSyncKind::StreamSync && cs->stream >= 0)
            {
                s.second = cs->stream;
            }
            else if (!currentStream(call, call.tsUs, s))
            {
                continue;
            }
            link.stream = s.second;
            int64_t last = lastLaunchOnStream(s, call.tsUs);
            if (last >= 0)
            {
                link.awaited.push_back(static_cast<uint32_t>(last));
            }
            break;
        }
        case CallClass::EventSync: {
            link.what = DepDetail::EventSync;
            int64_t rec = -1;
            StreamKey s{dev, -1};
            if (cs && cs->syncKind == KinetoSyncKind::EventSync && cs->waitOnRecordCorrelation >= 0)
            {
                auto r = callByCorrelation.find(cs->waitOnRecordCorrelation);
                if (r != callByCorrelation.end())
                {
                    rec = r->second;
                    s.second = cs->waitOnStream;
                }
            }
            if (rec < 0)
            {
                auto own = records.find({call.pid, call.tid});
                if (own != records.end())
                {
                    for (auto it = own->second.rbegin(); it != own->second.rend(); ++it)
                    {
                        if (ev[it->call].tsUs <= call.tsUs)
                        {
                            rec = it->call;
                            s = it->stream;
                            break;
                        }
                    }
                }
            }
            if (rec < 0 || s.second < 0)
            {
                continue;
            }
            link.recordCall = rec;
            link.stream = s.second;
            int64_t last = lastLaunchOnStream(s, ev[rec].tsUs);
            if (last >= 0)
            {
                link.awaited.push_back(static_cast<uint32_t>(last));
            }
            break;
        }
        case CallClass::DeviceSync: {
            link.what = DepDetail::DeviceSync;
            for (auto& [key, list] : streamLaunches)
            {
                if (key.first != dev && !(cs == nullptr && trace.devices.size() <= 1))
                {
                    continue;
                }
                int64_t k = list.LastAtOrBefore(call.tsUs);
                if (k >= 0)
                {
                    link.awaited.push_back(list.gpu[k]);
                }
            }
            break;
        }
        case CallClass::MemcpySync:
        case CallClass::MemcpyAsync: {
            auto it = gpuOfCall.find(c);
            if (it == gpuOfCall.end())
            {
                continue;
            }
            bool blocking = cls[c] == CallClass::MemcpySync;
            for (uint32_t gop : it->second)
            {
                // An async copy into pageable host memory returns only when done.
                if (ev[gop].category == KinetoCategory::Memcpy &&
                    (blocking || (Contains(ev[gop].name, "DtoH") &&
                                  Contains(ev[gop].name, "Pageable"))))
                {
                    link.awaited.push_back(gop);
                    link.stream = ev[gop].stream;
                }
            }
            if (link.awaited.empty())
            {
                continue;
            }
            link.what = DepDetail::SyncCopy;
            break;
        }
        default:
            continue;
        }
        // The call returned after what it waited for: an awaited op recorded as ending later
        // means the stream (or event) was inferred wrongly; such a call did not wait for it.
        const double toleranceUs = 5.0;
        link.awaited.erase(std::remove_if(link.awaited.begin(),
                                          link.awaited.end(),
                                          [&](uint32_t a) {
                                              return ev[a].EndUs() > call.EndUs() + toleranceUs;
                                          }),
                           link.awaited.end());
        if (link.awaited.empty())
        {
            continue;
        }
        for (uint32_t a : link.awaited)
        {
            link.awaitedEndUs = std::max(link.awaitedEndUs, ev[a].EndUs());
            if (options.gpuCpu)
            {
                addDep(a, c, DepKind::GpuCpu, link.what);
            }
        }
        g.syncs.push_back(std::move(link));
    }
    NS_LOG_INFO("graph " << trace.file << ": cpu_cpu " << g.counts.cpuCpu << " cpu_gpu "
                         << g.counts.cpuGpu << " gpu_cpu " << g.counts.gpuCpu << " gpu_gpu "
                         << g.counts.gpuGpu << " cross-stream " << ToString(g.crossStreamMethod));
    return g;
}

// ---------------------------------------------------------------------------------------------
// Conversion to the Op IR
// ---------------------------------------------------------------------------------------------

bool
ParseKinetoCollective(const std::string& raw, CollKind& out)
{
    std::string s;
    for (char c : raw)
    {
        if (c != '_' && c != ' ')
        {
            s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        }
    }
    // PyTorch variants: _allgather_base, allgather_into_tensor_coalesced, reduce_scatter_tensor…
    for (const char* suffix : {"coalesced", "base", "intotensor", "tensor"})
    {
        std::string_view sv(s);
        if (EndsWith(sv, suffix))
        {
            s.resize(s.size() - std::strlen(suffix));
        }
    }
    auto has = [&s](const char* p) { return s.find(p) != std::string::npos; };
    // Kernel names: ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_AllGather_RING_LL.
    if (has("allreduce") || s == "barrier")
    {
        out = CollKind::AllReduce;
    }
    else if (has("allgather"))
    {
        out = CollKind::AllGather;
    }
    else if (has("reducescatter"))
    {
        out = CollKind::ReduceScatter;
    }
    else if (has("alltoall"))
    {
        out = CollKind::AllToAll;
    }
    else if (has("broadcast"))
    {
        out = CollKind::Broadcast;
    }
    else if (has("sendrecv") || s == "send" || has("kernelsend"))
    {
        out = CollKind::Send;
    }
    else if (s == "recv" || has("kernelrecv"))
    {
        out = CollKind::Recv;
    }
    else if (s == "reduce" || has("kernelreduce"))
    {
        out = CollKind::Reduce;
    }
    else
    {
        return false;
    }
    return true;
}

bool
ParseKinetoDtype(const std::string& name, DataType& out, uint32_t& size)
{
    struct Entry
    {
        const char* name;
        DataType type;
        uint32_t size;
    };
    static const Entry table[] = {
        {"Float", DataType::F32, 4},         {"float", DataType::F32, 4},
        {"Half", DataType::F16, 2},          {"BFloat16", DataType::BF16, 2},
        {"Double", DataType::F64, 8},        {"Char", DataType::I8, 1},
        {"Byte", DataType::U8, 1},           {"Bool", DataType::U8, 1},
        {"Int", DataType::I32, 4},           {"Long", DataType::I64, 8},
        {"UInt32", DataType::U32, 4},        {"UInt64", DataType::U64, 8},
        {"Float8_e4m3fn", DataType::F8E4M3, 1}, {"Float8_e4m3fnuz", DataType::F8E4M3, 1},
        {"Float8_e5m2", DataType::F8E5M2, 1},   {"Float8_e5m2fnuz", DataType::F8E5M2, 1},
    };
    for (const auto& e : table)
    {
        if (name == e.name)
        {
            out = e.type;
            size = e.size;
            return true;
        }
    }
    return false;
}

namespace
{

/// One thing a host thread does, at a recorded time, before conversion into Ops.
struct HostItem
{
    enum Kind : uint8_t
    {
        ThreadWait,  // before the op it precedes
        MarkerBegin,
        Call,        // launch / record / wait-event / sync
        Signal,
        MarkerEnd,
    };
    double key = 0;   // sort time
    Kind kind = Call;
    uint32_t event = 0;
    uint64_t token = 0;
    double otherEndUs = 0; // ThreadWait: end of the signalling op
    double idleFromUs = 0; // ThreadWait: end of this thread's previous top-level op
};

MemcpyKind
CopyKindFromName(std::string_view name)
{
    if (Contains(name, "HtoD"))
    {
        return MemcpyKind::HostToDevice;
    }
    if (Contains(name, "DtoH"))
    {
        return MemcpyKind::DeviceToHost;
    }
    if (Contains(name, "DtoD"))
    {
        return MemcpyKind::DeviceToDevice;
    }
    if (Contains(name, "HtoH"))
    {
        return MemcpyKind::HostToHost;
    }
    if (Contains(name, "PtoP") || Contains(name, "Peer"))
    {
        return MemcpyKind::PeerToPeer;
    }
    return MemcpyKind::Default;
}

bool
IsNcclKernel(const KinetoEvent& e)
{
    return e.category == KinetoCategory::Kernel &&
           (Contains(e.name, "nccl") || Contains(e.name, "rccl") || Contains(e.name, "NCCL"));
}

/// Parses "[0, 1, 2]" into integers.
std::vector<int64_t>
ParseRankList(const std::string& s)
{
    std::vector<int64_t> out;
    int64_t cur = 0;
    bool in = false;
    for (char c : s)
    {
        if (c >= '0' && c <= '9')
        {
            cur = cur * 10 + (c - '0');
            in = true;
        }
        else if (in)
        {
            out.push_back(cur);
            cur = 0;
            in = false;
        }
    }
    if (in)
    {
        out.push_back(cur);
    }
    return out;
}

} // namespace

RankTrace
KinetoToRankTrace(const KinetoTrace& trace, const KinetoGraph& graph)
{
    const auto& ev = trace.events;
    const size_t n = ev.size();
    const auto& opt = graph.options;
    RankTrace rt;
    rt.rank = static_cast<uint32_t>(std::max<int64_t>(0, trace.rank));
    rt.device = trace.devices.empty() ? "" : trace.devices.front().name;

    // Stream ids: raw Kineto stream ids on one device, device-qualified on several.
    std::set<int64_t> gpuDevices;
    for (const auto& e : ev)
    {
        if (e.IsGpu())
        {
            gpuDevices.insert(e.device);
        }
    }
    auto streamId = [&gpuDevices](int64_t device, int64_t stream) -> int64_t {
        // Wrapping unsigned arithmetic: ids from damaged traces may be negative.
        return gpuDevices.size() <= 1
                   ? stream
                   : static_cast<int64_t>((static_cast<uint64_t>(device) << 32) +
                                          static_cast<uint64_t>(stream));
    };
    int64_t device0 = gpuDevices.empty() ? 0 : *gpuDevices.begin();

    // Which calls take part in which GPU-side role.
    std::unordered_map<uint32_t, std::vector<uint32_t>> gpuOfCall;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (graph.launchOf[i] >= 0)
        {
            gpuOfCall[static_cast<uint32_t>(graph.launchOf[i])].push_back(i);
        }
    }
    std::unordered_map<uint32_t, const KinetoSyncLink*> syncOfCall;
    for (const auto& s : graph.syncs)
    {
        syncOfCall[s.call] = &s;
    }
    // Event ids: one per record call that some wait or event sync refers to.
    std::map<uint32_t, uint64_t> eventOfRecord;
    std::unordered_map<uint32_t, int64_t> recordStream;
    std::unordered_map<uint32_t, std::vector<const KinetoCrossStreamLink*>> waitsOfCall;
    if (opt.gpuGpu)
    {
        for (const auto& l : graph.crossStream)
        {
            eventOfRecord.emplace(l.recordCall, 0);
            recordStream[l.recordCall] = l.recordStream;
            waitsOfCall[l.waitCall].push_back(&l);
        }
    }
    if (opt.gpuCpu)
    {
        for (const auto& s : graph.syncs)
        {
            if (s.what == DepDetail::EventSync && s.recordCall >= 0 && !s.awaited.empty())
            {
                eventOfRecord.emplace(static_cast<uint32_t>(s.recordCall), 0);
                recordStream[static_cast<uint32_t>(s.recordCall)] = s.stream;
            }
        }
    }
    {
        uint64_t next = 1;
        for (auto& [call, id] : eventOfRecord)
        {
            id = next++;
        }
    }

    // Host items per thread.
    std::map<ThreadKey, std::vector<HostItem>> items;
    auto add = [&items](const KinetoEvent& e, HostItem item) {
        items[{e.pid, e.tid}].push_back(item);
    };
    ThreadKey firstThread{0, 0};
    bool haveFirst = false;
    for (uint32_t i = 0; i < n; ++i)
    {
        const auto& e = ev[i];
        if (e.IsHost() && !haveFirst)
        {
            firstThread = {e.pid, e.tid};
            haveFirst = true;
        }
        if (e.category == KinetoCategory::UserAnnotation &&
            e.name.compare(0, 12, "ProfilerStep") == 0)
        {
            add(e, HostItem{e.tsUs, HostItem::MarkerBegin, i});
            add(e, HostItem{e.EndUs(), HostItem::MarkerEnd, i});
            continue;
        }
        if (e.category != KinetoCategory::Runtime && e.category != KinetoCategory::Driver)
        {
            continue;
        }
        bool relevant = gpuOfCall.count(i) || eventOfRecord.count(i) || waitsOfCall.count(i) ||
                        (opt.gpuCpu && syncOfCall.count(i));
        if (relevant)
        {
            add(e, HostItem{e.tsUs, HostItem::Call, i});
        }
    }
    // GPU ops without a launch call: issue them from the first thread at their GPU start.
    std::vector<uint32_t> orphans;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (ev[i].IsGpu() && graph.launchOf[i] < 0)
        {
            orphans.push_back(i);
            items[firstThread].push_back(HostItem{ev[i].tsUs, HostItem::Call, i});
        }
    }
    uint64_t nextToken = 1;
    for (const auto& l : graph.threadLinks)
    {
        uint64_t token = nextToken++;
        const auto& from = ev[l.from];
        const auto& to = ev[l.to];
        HostItem s{from.EndUs(), HostItem::Signal, l.from, token};
        add(from, s);
        HostItem w{to.tsUs, HostItem::ThreadWait, l.to, token, from.EndUs(), l.idleFromUs};
        add(to, w);
    }

    // Thread indices: in order of first activity.
    std::vector<std::pair<double, ThreadKey>> threadOrder;
    for (auto& [key, list] : items)
    {
        std::stable_sort(list.begin(), list.end(), [](const HostItem& a, const HostItem& b) {
            if (a.key != b.key)
            {
                return a.key < b.key;
            }
            return a.kind < b.kind;
        });
        threadOrder.emplace_back(list.empty() ? 0.0 : list.front().key, key);
    }
    std::stable_sort(threadOrder.begin(), threadOrder.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });

    // Collective sequence numbers per communicator, in launch order.
    std::unordered_map<int64_t, const KinetoEvent*> paramCommsByExternal;
    for (const auto& e : ev)
    {
        if (e.category == KinetoCategory::CpuOp && e.name == "record_param_comms" &&
            e.coll.present && e.externalId >= 0)
        {
            paramCommsByExternal.emplace(e.externalId, &e);
        }
    }
    auto collArgsOf = [&](uint32_t gpu) -> const KinetoCollectiveArgs* {
        if (ev[gpu].coll.present)
        {
            return &ev[gpu].coll;
        }
        int64_t call = graph.launchOf[gpu];
        if (call < 0)
        {
            return nullptr;
        }
        // The launch happens inside PyTorch's record_param_comms op, which carries the args.
        for (int64_t p = graph.parent[call]; p >= 0; p = graph.parent[p])
        {
            if (ev[p].name == "record_param_comms" && ev[p].coll.present)
            {
                return &ev[p].coll;
            }
        }
        for (int64_t id : {ev[gpu].externalId, ev[call].externalId})
        {
            auto it = paramCommsByExternal.find(id);
            if (id >= 0 && it != paramCommsByExternal.end())
            {
                return &it->second->coll;
            }
        }
        return nullptr;
    };
    std::map<std::string, uint64_t> seqOfComm;
    std::map<std::string, std::pair<int32_t, int32_t>> commInfo; // nranks, commRank
    std::map<std::string, uint32_t> commFirstThread;

    // Builds the Op for one GPU activity.
    auto gpuOp = [&](uint32_t i, uint32_t thread) {
        const auto& e = ev[i];
        Op op;
        op.thread = thread;
        op.stream = streamId(e.device, e.stream);
        op.name = e.name;
        op.durUs = e.durUs;
        if (e.category == KinetoCategory::Memcpy)
        {
            op.kind = OpKind::Memcpy;
            op.copyKind = CopyKindFromName(e.name);
            op.bytes = e.bytes;
            return op;
        }
        if (e.category == KinetoCategory::Memset)
        {
            op.kind = OpKind::Memset;
            op.bytes = e.bytes;
            return op;
        }
        op.kind = OpKind::Kernel;
        if (e.hasLaunchShape)
        {
            op.grid = e.grid;
            op.block = e.block;
        }
        CollKind kind;
        const KinetoCollectiveArgs* args = IsNcclKernel(e) ? collArgsOf(i) : nullptr;
        bool mapped = IsNcclKernel(e) && ((args && ParseKinetoCollective(args->name, kind)) ||
                                         ParseKinetoCollective(e.name, kind));
        if (!mapped)
        {
            return op;
        }
        op.kind = OpKind::Collective;
        op.coll = kind;
        uint32_t size = 1;
        DataType dt = DataType::U8;
        if (args && ParseKinetoDtype(args->dtype, dt, size))
        {
            op.dtype = dt;
        }
        else
        {
            op.dtype = DataType::U8;
            size = 1;
        }
        if (args && !args->pgName.empty())
        {
            op.comm = "pg:" + args->pgName;
        }
        else if (args && !args->pgRanks.empty())
        {
            op.comm = "ranks:" + args->pgRanks;
        }
        else
        {
            op.comm = "unknown";
        }
        if (args)
        {
            op.count = static_cast<uint64_t>(std::max<int64_t>(0, args->inNelems));
            uint64_t elems = kind == CollKind::AllGather
                                 ? static_cast<uint64_t>(std::max<int64_t>(0, args->outNelems))
                                 : op.count;
            op.bytes = elems * size;
        }
        int32_t nranks = static_cast<int32_t>(trace.worldSize);
        int32_t commRank = static_cast<int32_t>(std::max<int64_t>(0, trace.rank));
        if (args && args->groupSize > 0)
        {
            nranks = static_cast<int32_t>(args->groupSize);
        }
        if (args)
        {
            auto ranks = ParseRankList(args->pgRanks);
            auto it = std::find(ranks.begin(), ranks.end(), trace.rank);
            if (it != ranks.end())
            {
                commRank = static_cast<int32_t>(it - ranks.begin());
            }
        }
        if (!commInfo.count(op.comm))
        {
            commInfo[op.comm] = {nranks, commRank};
            commFirstThread[op.comm] = thread;
        }
        if (kind != CollKind::Send && kind != CollKind::Recv)
        {
            op.seq = seqOfComm[op.comm]++;
        }
        return op;
    };

    // Emit each thread's ops; cpu_us is the recorded host time before each op, measured from
    // a cursor that skips time spent blocked (waits, syncs), so replaying with the recorded
    // GPU durations reproduces the timing and removing a dependency removes its wait.
    std::vector<std::vector<Op>> perThread(threadOrder.size());
    for (uint32_t t = 0; t < threadOrder.size(); ++t)
    {
        auto& out = perThread[t];
        auto& list = items[threadOrder[t].second];
        double cursor = 0;
        std::vector<Op> gpuFront; // cpuGpu ablation: GPU-side ops detached from the host
        auto emitHost = [&](double cpu, const std::string& name) {
            if (cpu > 0)
            {
                Op h;
                h.kind = OpKind::HostWork;
                h.thread = t;
                h.cpuUs = cpu;
                h.name = name;
                out.push_back(h);
            }
        };
        // A GPU-side op (launch, record, stream wait): issued when its call returns.
        auto emitGpuSide = [&](Op op, double cpu) {
            if (opt.cpuGpu)
            {
                op.cpuUs = cpu;
                out.push_back(std::move(op));
            }
            else
            {
                emitHost(cpu, op.name);
                op.cpuUs = 0;
                gpuFront.push_back(std::move(op));
            }
        };
        for (const auto& item : list)
        {
            const auto& e = ev[item.event];
            switch (item.kind)
            {
            case HostItem::MarkerBegin:
            case HostItem::MarkerEnd: {
                Op m;
                m.kind = OpKind::Marker;
                m.thread = t;
                m.name = e.name;
                m.phase = item.kind == HostItem::MarkerBegin ? MarkerPhase::Begin
                                                             : MarkerPhase::End;
                m.recordedUs = item.key;
                m.cpuUs = std::max(0.0, item.key - cursor);
                cursor = std::max(cursor, item.key);
                out.push_back(m);
                break;
            }
            case HostItem::Signal: {
                Op s;
                s.kind = OpKind::ThreadSignal;
                s.thread = t;
                s.token = item.token;
                s.cpuUs = std::max(0.0, item.key - cursor);
                cursor = std::max(cursor, item.key);
                if (opt.cpuCpu)
                {
                    out.push_back(s);
                }
                else
                {
                    emitHost(s.cpuUs, "");
                }
                break;
            }
            case HostItem::ThreadWait: {
                // Busy until the previous top-level op ended; then idle until the other
                // thread's op ended: that idle time is the wait, not CPU work.
                double busy = std::max(0.0, item.idleFromUs - cursor);
                cursor = std::max(cursor, item.idleFromUs);
                Op w;
                w.kind = OpKind::ThreadWait;
                w.thread = t;
                w.token = item.token;
                w.cpuUs = busy;
                if (opt.cpuCpu)
                {
                    out.push_back(w);
                }
                else
                {
                    emitHost(busy, "");
                }
                cursor = std::max(cursor, item.otherEndUs);
                break;
            }
            case HostItem::Call: {
                if (e.IsGpu())
                {
                    // Orphan GPU op: issued at its recorded start.
                    double cpu = std::max(0.0, e.tsUs - cursor);
                    cursor = std::max(cursor, e.tsUs);
                    emitGpuSide(gpuOp(item.event, t), cpu);
                    break;
                }
                auto syncIt = syncOfCall.find(item.event);
                const KinetoSyncLink* sync =
                    syncIt != syncOfCall.end() && !syncIt->second->awaited.empty()
                        ? syncIt->second
                        : nullptr;
                auto gpuIt = gpuOfCall.find(item.event);
                auto recIt = eventOfRecord.find(item.event);
                auto waitIt = waitsOfCall.find(item.event);
                if (sync)
                {
                    // Blocking call: host time before it, then the wait, then what the call
                    // cost after the awaited GPU work finished.
                    double issue = e.tsUs;
                    if (sync->what == DepDetail::SyncCopy)
                    {
                        // The copy starts some µs into the call (staging, launch); that
                        // part is host time, so issue the copy when it really started.
                        double gpuStart = e.EndUs();
                        for (uint32_t a : sync->awaited)
                        {
                            gpuStart = std::min(gpuStart, ev[a].tsUs);
                        }
                        issue = std::clamp(gpuStart, e.tsUs, e.EndUs());
                    }
                    double pre = std::max(0.0, issue - cursor);
                    cursor = std::max(cursor, issue);
                    double waitedUntil = std::max(issue, sync->awaitedEndUs);
                    double residual = std::clamp(e.EndUs() - waitedUntil, 0.0, e.durUs);
                    if (sync->what == DepDetail::SyncCopy && gpuIt != gpuOfCall.end())
                    {
                        // The copy itself is the blocking op.
                        bool first = true;
                        for (uint32_t gi : gpuIt->second)
                        {
                            Op op = gpuOp(gi, t);
                            bool blocking = std::find(sync->awaited.begin(),
                                                      sync->awaited.end(),
                                                      gi) != sync->awaited.end();
                            op.async = !(blocking && opt.gpuCpu);
                            op.cpuUs = first ? pre : 0;
                            first = false;
                            if (!op.async || opt.cpuGpu)
                            {
                                out.push_back(std::move(op));
                            }
                            else
                            {
                                double c = op.cpuUs;
                                emitGpuSide(std::move(op), c);
                            }
                        }
                    }
                    else
                    {
                        Op s;
                        s.thread = t;
                        s.cpuUs = pre;
                        s.name = e.name;
                        s.stream = sync->stream >= 0 ? streamId(device0, sync->stream) : 0;
                        if (sync->what == DepDetail::StreamSync)
                        {
                            s.kind = OpKind::StreamSync;
                        }
                        else if (sync->what == DepDetail::DeviceSync)
                        {
                            s.kind = OpKind::DeviceSync;
                        }
                        else
                        {
                            s.kind = OpKind::EventSync;
                            s.event = eventOfRecord[static_cast<uint32_t>(sync->recordCall)];
                        }
                        out.push_back(s);
                    }
                    emitHost(residual, e.name);
                    cursor = std::max(cursor, e.EndUs());
                    break;
                }
                // Non-blocking call: its whole duration is host time, issued at its return.
                double cpu = std::max(0.0, e.EndUs() - cursor);
                cursor = std::max(cursor, e.EndUs());
                if (gpuIt != gpuOfCall.end())
                {
                    for (uint32_t gi : gpuIt->second)
                    {
                        emitGpuSide(gpuOp(gi, t), cpu);
                        cpu = 0;
                    }
                }
                if (recIt != eventOfRecord.end())
                {
                    Op r;
                    r.kind = OpKind::EventRecord;
                    r.thread = t;
                    r.name = e.name;
                    r.event = recIt->second;
                    r.stream = streamId(device0, recordStream[item.event]);
                    emitGpuSide(r, cpu);
                    cpu = 0;
                }
                if (waitIt != waitsOfCall.end())
                {
                    for (const auto* l : waitIt->second)
                    {
                        Op w;
                        w.kind = OpKind::StreamWaitEvent;
                        w.thread = t;
                        w.name = e.name;
                        w.event = eventOfRecord[l->recordCall];
                        w.stream = streamId(device0, l->waitStream);
                        emitGpuSide(w, cpu);
                        cpu = 0;
                    }
                }
                emitHost(cpu, e.name);
                break;
            }
            }
        }
        if (!gpuFront.empty())
        {
            out.insert(out.begin(), gpuFront.begin(), gpuFront.end());
        }
    }

    // Communicators are created before anything else on the thread that first uses them.
    for (const auto& [comm, info] : commInfo)
    {
        Op init;
        init.kind = OpKind::CommInit;
        init.thread = commFirstThread[comm];
        init.comm = comm;
        init.nranks = info.first;
        init.commRank = info.second;
        auto& list = perThread[init.thread];
        list.insert(list.begin(), init);
    }
    for (auto& list : perThread)
    {
        for (auto& op : list)
        {
            rt.ops.push_back(std::move(op));
        }
    }
    NS_LOG_INFO("converted " << trace.file << ": " << rt.ops.size() << " ops on "
                             << perThread.size() << " threads, " << orphans.size()
                             << " orphan GPU ops");
    return rt;
}

JobTrace
ReadKinetoJob(const std::vector<std::string>& files, const KinetoGraphOptions& options)
{
    JobTrace job;
    job.source = "kineto";
    std::set<uint32_t> seen;
    for (size_t k = 0; k < files.size(); ++k)
    {
        KinetoTrace trace = ReadKinetoTrace(files[k]);
        if (trace.rank < 0)
        {
            trace.rank = static_cast<int64_t>(k);
        }
        if (!seen.insert(static_cast<uint32_t>(trace.rank)).second)
        {
            throw TraceFormatError(files[k], 0, "rank " + std::to_string(trace.rank) +
                                                    " appears in more than one file");
        }
        KinetoGraph graph = BuildKinetoGraph(trace, options);
        job.ranks.push_back(KinetoToRankTrace(trace, graph));
        job.metadata["file." + std::to_string(trace.rank)] = files[k];
    }
    std::sort(job.ranks.begin(), job.ranks.end(),
              [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
    return job;
}


} // namespace gpusim
} // namespace ns3
