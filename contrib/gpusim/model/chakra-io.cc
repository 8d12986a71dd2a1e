/*
 * Chakra ET files: framing (varint length + message, optionally gzip), the protobuf messages
 * <-> ChakraNode, rank-file discovery and ASTRA-sim comm-group files. The DAG <-> Op IR
 * conversion is in chakra-convert.cc.
 */
#include "ns3/chakra-trace.h"

#include "chakra-et.pb.h"

#include "ns3/log.h"

#include <google/protobuf/io/coded_stream.h>
#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <functional>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ChakraTrace");

namespace gpusim
{

namespace fs = std::filesystem;
namespace pb = ChakraProtoMsg;

const char*
ToString(ChakraNodeType t)
{
    switch (t)
    {
    case ChakraNodeType::Invalid:
        return "INVALID_NODE";
    case ChakraNodeType::Metadata:
        return "METADATA_NODE";
    case ChakraNodeType::MemLoad:
        return "MEM_LOAD_NODE";
    case ChakraNodeType::MemStore:
        return "MEM_STORE_NODE";
    case ChakraNodeType::Comp:
        return "COMP_NODE";
    case ChakraNodeType::CommSend:
        return "COMM_SEND_NODE";
    case ChakraNodeType::CommRecv:
        return "COMM_RECV_NODE";
    case ChakraNodeType::CommColl:
        return "COMM_COLL_NODE";
    }
    return "?";
}

const char*
ToString(ChakraCollType t)
{
    switch (t)
    {
    case ChakraCollType::AllReduce:
        return "ALL_REDUCE";
    case ChakraCollType::Reduce:
        return "REDUCE";
    case ChakraCollType::AllGather:
        return "ALL_GATHER";
    case ChakraCollType::Gather:
        return "GATHER";
    case ChakraCollType::Scatter:
        return "SCATTER";
    case ChakraCollType::Broadcast:
        return "BROADCAST";
    case ChakraCollType::AllToAll:
        return "ALL_TO_ALL";
    case ChakraCollType::ReduceScatter:
        return "REDUCE_SCATTER";
    case ChakraCollType::ReduceScatterBlock:
        return "REDUCE_SCATTER_BLOCK";
    case ChakraCollType::Barrier:
        return "BARRIER";
    }
    return "?";
}

namespace
{

/// Whole file, gunzipped when it starts with the gzip magic (zlib reads plain files as is).
std::string
ReadAllBytes(const std::string& file)
{
    if (!fs::is_regular_file(file))
    {
        throw TraceFormatError(file, 0, "not a readable file");
    }
    gzFile f = gzopen(file.c_str(), "rb");
    if (!f)
    {
        throw TraceFormatError(file, 0, "cannot open");
    }
    std::string out;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof(buf))) > 0)
    {
        out.append(buf, n);
    }
    const bool bad = n < 0;
    gzclose(f);
    if (bad)
    {
        throw TraceFormatError(file, 0, "corrupt gzip stream");
    }
    return out;
}

/// Integer value of an attribute of any integer (or bool) type; false if it holds none.
bool
AttrInt(const pb::AttributeProto& a, int64_t& v)
{
    switch (a.value_case())
    {
    case pb::AttributeProto::kInt32Val:
        v = a.int32_val();
        return true;
    case pb::AttributeProto::kInt64Val:
        v = a.int64_val();
        return true;
    case pb::AttributeProto::kUint32Val:
        v = a.uint32_val();
        return true;
    case pb::AttributeProto::kUint64Val:
        v = static_cast<int64_t>(a.uint64_val());
        return true;
    case pb::AttributeProto::kSint32Val:
        v = a.sint32_val();
        return true;
    case pb::AttributeProto::kSint64Val:
        v = a.sint64_val();
        return true;
    case pb::AttributeProto::kFixed32Val:
        v = a.fixed32_val();
        return true;
    case pb::AttributeProto::kFixed64Val:
        v = static_cast<int64_t>(a.fixed64_val());
        return true;
    case pb::AttributeProto::kSfixed32Val:
        v = a.sfixed32_val();
        return true;
    case pb::AttributeProto::kSfixed64Val:
        v = a.sfixed64_val();
        return true;
    case pb::AttributeProto::kBoolVal:
        v = a.bool_val() ? 1 : 0;
        return true;
    default:
        return false;
    }
}

bool
AttrDouble(const pb::AttributeProto& a, double& v)
{
    if (a.value_case() == pb::AttributeProto::kDoubleVal)
    {
        v = a.double_val();
        return true;
    }
    if (a.value_case() == pb::AttributeProto::kFloatVal)
    {
        v = a.float_val();
        return true;
    }
    int64_t i;
    if (AttrInt(a, i))
    {
        v = static_cast<double>(i);
        return true;
    }
    return false;
}

/// Copies the attributes gpusim uses; `where` prefixes errors.
void
ReadAttributes(const pb::Node& n, ChakraNode& out, const std::function<void(std::string)>& fail)
{
    for (const auto& a : n.attr())
    {
        const std::string& k = a.name();
        out.attrNames.push_back(k);
        int64_t i = 0;
        double d = 0;
        auto needInt = [&]() {
            if (!AttrInt(a, i))
            {
                fail("attribute '" + k + "' is not an integer");
            }
        };
        if (k == "is_cpu_op")
        {
            needInt();
            out.isCpuOp = i != 0;
        }
        else if (k == "num_ops")
        {
            if (!AttrDouble(a, d) || d < 0)
            {
                fail("attribute 'num_ops' is not a non-negative number");
            }
            out.numOps = d;
        }
        else if (k == "tensor_size" || k == "comm_size")
        {
            needInt();
            if (i < 0)
            {
                fail("attribute '" + k + "' is negative (" + std::to_string(i) + ")");
            }
            (k == "tensor_size" ? out.tensorSize : out.commSize) = static_cast<uint64_t>(i);
        }
        else if (k == "comm_type" || k == "comm_src" || k == "comm_dst" || k == "comm_tag" ||
                 k == "gpusim_root")
        {
            needInt();
            if (i < 0 || i > INT32_MAX)
            {
                fail("attribute '" + k + "' out of range (" + std::to_string(i) + ")");
            }
            int32_t v = static_cast<int32_t>(i);
            (k == "comm_type"   ? out.commType
             : k == "comm_src"  ? out.commSrc
             : k == "comm_dst"  ? out.commDst
             : k == "comm_tag"  ? out.commTag
                                : out.root) = v;
        }
        else if (k == "pg_name" || k == "gpusim_dtype")
        {
            if (a.value_case() != pb::AttributeProto::kStringVal)
            {
                fail("attribute '" + k + "' is not a string");
            }
            (k == "pg_name" ? out.pgName : out.dtype) = a.string_val();
        }
        else if (k == "gpusim_dur_us")
        {
            if (!AttrDouble(a, d) || d < 0)
            {
                fail("attribute 'gpusim_dur_us' is not a non-negative number");
            }
            out.exactDurUs = d;
        }
        else
        {
            out.otherAttrs.push_back(k);
        }
    }
}

/// Reads one varint-length-prefixed message at `pos`; returns false at a clean end of file.
bool
NextMessage(const std::string& bytes, size_t& pos, const char*& data, uint32_t& size,
            const std::function<void(std::string)>& fail)
{
    if (pos >= bytes.size())
    {
        return false;
    }
    google::protobuf::io::CodedInputStream in(
        reinterpret_cast<const uint8_t*>(bytes.data() + pos),
        static_cast<int>(std::min<size_t>(bytes.size() - pos, 10)));
    if (!in.ReadVarint32(&size))
    {
        fail("truncated or invalid length prefix");
    }
    const size_t header = static_cast<size_t>(in.CurrentPosition());
    if (size > bytes.size() - pos - header)
    {
        fail("message length " + std::to_string(size) + " runs past the end of the file (" +
             std::to_string(bytes.size() - pos - header) + " bytes left)");
    }
    data = bytes.data() + pos + header;
    pos += header + size;
    return true;
}

pb::AttributeProto*
AddAttr(pb::Node& n, const std::string& name)
{
    pb::AttributeProto* a = n.add_attr();
    a->set_name(name);
    return a;
}

} // namespace

ChakraRankFile
ReadChakraFile(const std::string& file)
{
    const std::string bytes = ReadAllBytes(file);
    ChakraRankFile out;
    out.file = file;
    size_t pos = 0;
    int64_t index = -1; // -1: the GlobalMetadata message
    size_t start = 0;
    auto fail = [&](const std::string& what) {
        const std::string which =
            index < 0 ? "GlobalMetadata" : "node " + std::to_string(index);
        throw TraceFormatError(file, 0,
                               which + " at byte offset " + std::to_string(start) + ": " + what);
    };
    const char* data = nullptr;
    uint32_t size = 0;
    if (!NextMessage(bytes, pos, data, size, fail))
    {
        fail("empty file (a Chakra ET file starts with a GlobalMetadata message)");
    }
    pb::GlobalMetadata meta;
    if (!meta.ParseFromArray(data, static_cast<int>(size)))
    {
        fail("not a valid GlobalMetadata message");
    }
    out.version = meta.version();
    for (const auto& a : meta.attr())
    {
        if (a.value_case() == pb::AttributeProto::kStringVal)
        {
            out.metadata[a.name()] = a.string_val();
        }
    }
    for (index = 0, start = pos; NextMessage(bytes, pos, data, size, fail); ++index, start = pos)
    {
        pb::Node n;
        if (!n.ParseFromArray(data, static_cast<int>(size)))
        {
            fail("not a valid Chakra Node message");
        }
        ChakraNode c;
        c.offset = start;
        c.id = n.id();
        c.name = n.name();
        const int t = static_cast<int>(n.type());
        if (t < 0 || t > static_cast<int>(ChakraNodeType::CommColl))
        {
            fail("unknown node type " + std::to_string(t));
        }
        c.type = static_cast<ChakraNodeType>(t);
        c.dataDeps.assign(n.data_deps().begin(), n.data_deps().end());
        c.ctrlDeps.assign(n.ctrl_deps().begin(), n.ctrl_deps().end());
        c.startUs = n.start_time_micros();
        c.durationUs = n.duration_micros();
        if (c.type == ChakraNodeType::Metadata && n.has_inputs())
        {
            c.inputsValues = n.inputs().values();
        }
        ReadAttributes(n, c, [&](const std::string& w) {
            fail("(id " + std::to_string(c.id) + ") " + w);
        });
        out.nodes.push_back(std::move(c));
    }
    NS_LOG_INFO(file << ": " << out.nodes.size() << " nodes, version " << out.version);
    return out;
}

void
WriteChakraFile(const ChakraRankFile& rank, const std::string& file)
{
    std::string buf;
    auto append = [&buf](const google::protobuf::MessageLite& m) {
        std::string body;
        if (!m.SerializeToString(&body))
        {
            throw std::runtime_error("cannot serialise a Chakra message");
        }
        // Varint length prefix, as Chakra's protoio / encodeMessage write it.
        uint64_t n = body.size();
        do
        {
            uint8_t b = n & 0x7f;
            n >>= 7;
            buf.push_back(static_cast<char>(n ? (b | 0x80) : b));
        } while (n);
        buf += body;
    };
    pb::GlobalMetadata meta;
    meta.set_version(rank.version.empty() ? "0.0.4" : rank.version);
    for (const auto& [k, v] : rank.metadata)
    {
        pb::AttributeProto* a = meta.add_attr();
        a->set_name(k);
        a->set_string_val(v);
    }
    append(meta);
    for (const ChakraNode& c : rank.nodes)
    {
        pb::Node n;
        n.set_id(c.id);
        n.set_name(c.name);
        n.set_type(static_cast<pb::NodeType>(c.type));
        for (uint64_t d : c.ctrlDeps)
        {
            n.add_ctrl_deps(d);
        }
        for (uint64_t d : c.dataDeps)
        {
            n.add_data_deps(d);
        }
        if (!c.inputsValues.empty())
        {
            n.mutable_inputs()->set_values(c.inputsValues);
        }
        n.set_start_time_micros(c.startUs);
        n.set_duration_micros(c.durationUs);
        // Types as ASTRA-sim's feeder reads them (et_feeder_node.cpp).
        AddAttr(n, "is_cpu_op")->set_bool_val(c.isCpuOp);
        if (c.type == ChakraNodeType::Comp)
        {
            // ASTRA-sim's roofline reads both of every compute node (Workload::issue_comp:
            // num_ops / tensor_size, then num_ops / perf) and fails on a node without them.
            AddAttr(n, "num_ops")->set_int64_val(static_cast<int64_t>(c.numOps));
            AddAttr(n, "tensor_size")->set_uint64_val(c.tensorSize);
        }
        else
        {
            if (c.numOps > 0)
            {
                AddAttr(n, "num_ops")->set_int64_val(static_cast<int64_t>(c.numOps));
            }
            if (c.tensorSize > 0)
            {
                AddAttr(n, "tensor_size")->set_uint64_val(c.tensorSize);
            }
        }
        if (c.commType >= 0)
        {
            AddAttr(n, "comm_type")->set_int64_val(c.commType);
        }
        const bool comm = c.type == ChakraNodeType::CommColl ||
                          c.type == ChakraNodeType::CommSend ||
                          c.type == ChakraNodeType::CommRecv;
        if (comm)
        {
            AddAttr(n, "comm_size")->set_int64_val(static_cast<int64_t>(c.commSize));
        }
        if (c.commSrc >= 0)
        {
            AddAttr(n, "comm_src")->set_int32_val(c.commSrc);
        }
        if (c.commDst >= 0)
        {
            AddAttr(n, "comm_dst")->set_int32_val(c.commDst);
        }
        if (c.type == ChakraNodeType::CommSend || c.type == ChakraNodeType::CommRecv)
        {
            AddAttr(n, "comm_tag")->set_int32_val(c.commTag);
        }
        if (!c.pgName.empty())
        {
            AddAttr(n, "pg_name")->set_string_val(c.pgName);
        }
        if (c.exactDurUs >= 0)
        {
            AddAttr(n, "gpusim_dur_us")->set_double_val(c.exactDurUs);
        }
        if (c.root >= 0)
        {
            AddAttr(n, "gpusim_root")->set_int32_val(c.root);
        }
        if (!c.dtype.empty())
        {
            AddAttr(n, "gpusim_dtype")->set_string_val(c.dtype);
        }
        append(n);
    }
    const std::string tmp = file + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f.write(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (!f)
        {
            throw std::runtime_error("cannot write " + tmp);
        }
    }
    fs::rename(tmp, file);
}

std::vector<std::string>
FindChakraFiles(const std::string& dirOrPrefix)
{
    static const std::regex rankFile(R"((.*)\.([0-9]+)\.et(\.gz)?)");
    fs::path dir;
    std::string stem; // family name; "" = any (a directory)
    std::smatch m;
    const std::string base = fs::path(dirOrPrefix).filename().string();
    if (fs::is_directory(dirOrPrefix))
    {
        dir = dirOrPrefix;
    }
    else if (fs::is_regular_file(dirOrPrefix) && std::regex_match(base, m, rankFile))
    {
        dir = fs::path(dirOrPrefix).parent_path();
        stem = m[1].str();
    }
    else
    {
        dir = fs::path(dirOrPrefix).parent_path();
        stem = base;
    }
    if (dir.empty())
    {
        dir = ".";
    }
    std::map<std::string, std::map<uint64_t, std::string>> families;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
    {
        const std::string name = e.path().filename().string();
        if (e.is_regular_file() && std::regex_match(name, m, rankFile) &&
            (stem.empty() || m[1].str() == stem) && m[2].str().size() < 10)
        {
            families[m[1].str()][std::stoull(m[2].str())] = e.path().string();
        }
    }
    if (families.empty())
    {
        throw TraceFormatError(dirOrPrefix, 0, "no Chakra ET files (NAME.RANK.et) found");
    }
    if (families.size() > 1)
    {
        std::string names;
        for (const auto& [k, v] : families)
        {
            names += (names.empty() ? "" : ", ") + k;
        }
        throw TraceFormatError(dirOrPrefix, 0,
                               "several Chakra traces in one directory (" + names +
                                   "): name one as DIR/NAME");
    }
    const auto& ranks = families.begin()->second;
    std::vector<std::string> out;
    for (const auto& [r, path] : ranks)
    {
        if (r != out.size())
        {
            throw TraceFormatError(dirOrPrefix, 0,
                                   "rank file " + std::to_string(out.size()) +
                                       " is missing (found rank " + std::to_string(r) + ")");
        }
        out.push_back(path);
    }
    return out;
}

bool
IsChakraInput(const std::string& path)
{
    if (fs::is_directory(path) && fs::exists(fs::path(path) / "manifest.json"))
    {
        return false;
    }
    try
    {
        FindChakraFiles(path);
        return true;
    }
    catch (const TraceFormatError&)
    {
        return false;
    }
}

namespace
{

/// ASTRA-sim comm-group file: {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}.
std::map<std::string, std::vector<uint32_t>>
ReadCommGroups(const std::string& file, uint32_t nranks)
{
    std::map<std::string, std::vector<uint32_t>> out;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.load(file).get(doc))
    {
        throw TraceFormatError(file, 0, "not valid JSON");
    }
    simdjson::dom::object obj;
    if (doc.get(obj))
    {
        throw TraceFormatError(file, 0, "expected an object {\"GROUP\": [ranks...]}");
    }
    for (auto [key, value] : obj)
    {
        const std::string g(key);
        simdjson::dom::array arr;
        if (value.get(arr))
        {
            throw TraceFormatError(file, 0, "group '" + g + "' is not an array of ranks");
        }
        for (auto v : arr)
        {
            int64_t r;
            if (v.get(r) || r < 0 || r >= nranks)
            {
                throw TraceFormatError(file, 0,
                                       "group '" + g + "' names a rank outside 0.." +
                                           std::to_string(nranks - 1));
            }
            out[g].push_back(static_cast<uint32_t>(r));
        }
    }
    return out;
}

/// PyTorch's "## process_group:init ##" METADATA node (Chakra's PyTorch converter): inputs.values
/// is the Python repr of a one-string list, "['[{\"pg_name\": \"0\", \"ranks\": [0, 1]}, ...]']";
/// ASTRA-sim strips two characters at each end and parses the JSON; empty ranks = all ranks.
/// Returns false if the job has no such node.
bool
ReadPytorchProcessGroups(const ChakraJob& job, std::map<std::string, std::vector<uint32_t>>& out)
{
    const uint32_t nranks = static_cast<uint32_t>(job.ranks.size());
    for (const ChakraRankFile& f : job.ranks)
    {
        for (size_t i = 0; i < f.nodes.size(); ++i)
        {
            const ChakraNode& c = f.nodes[i];
            if (c.type != ChakraNodeType::Metadata ||
                c.name.find("process_group:init") == std::string::npos)
            {
                continue;
            }
            auto fail = [&](const std::string& what) {
                throw TraceFormatError(f.file, 0,
                                       "node " + std::to_string(i) + " at byte offset " +
                                           std::to_string(c.offset) + " ('" + c.name +
                                           "'): process-group table " + what);
            };
            const std::string& v = c.inputsValues;
            if (v.size() < 4)
            {
                fail("missing (inputs.values is empty)");
            }
            simdjson::dom::parser parser;
            simdjson::dom::array groups;
            if (parser.parse(v.substr(2, v.size() - 4)).get(groups))
            {
                fail("is not a JSON list inside ['...']");
            }
            for (simdjson::dom::element g : groups)
            {
                std::string_view name;
                simdjson::dom::array ranks;
                if (g["pg_name"].get(name) || g["ranks"].get(ranks))
                {
                    fail("entry without pg_name (string) and ranks (list)");
                }
                std::vector<uint32_t>& members = out[std::string(name)];
                for (auto r : ranks)
                {
                    int64_t x;
                    if (r.get(x) || x < 0 || x >= nranks)
                    {
                        fail("group '" + std::string(name) + "' names a rank outside 0.." +
                             std::to_string(nranks - 1));
                    }
                    members.push_back(static_cast<uint32_t>(x));
                }
                if (members.empty())
                {
                    for (uint32_t r = 0; r < nranks; ++r)
                    {
                        members.push_back(r);
                    }
                }
            }
            return true;
        }
    }
    return false;
}

} // namespace

ChakraJob
ReadChakraJob(const std::string& dirOrPrefix, const std::string& commGroupsFile)
{
    ChakraJob job;
    const std::vector<std::string> files = FindChakraFiles(dirOrPrefix);
    for (const std::string& f : files)
    {
        job.ranks.push_back(ReadChakraFile(f));
    }
    std::string groups = commGroupsFile;
    if (groups.empty())
    {
        // PREFIX.comm_groups.json beside the rank files (what WriteChakraJob writes).
        static const std::regex rankFile(R"((.*)\.[0-9]+\.et(\.gz)?)");
        std::smatch m;
        const std::string first = files.front();
        if (std::regex_match(first, m, rankFile) &&
            fs::is_regular_file(m[1].str() + ".comm_groups.json"))
        {
            groups = m[1].str() + ".comm_groups.json";
        }
    }
    if (!groups.empty())
    {
        job.commGroups = ReadCommGroups(groups, static_cast<uint32_t>(files.size()));
    }
    else
    {
        ReadPytorchProcessGroups(job, job.commGroups);
    }
    return job;
}

void
WriteChakraJob(const ChakraJob& job, const std::string& prefix)
{
    const fs::path parent = fs::path(prefix).parent_path();
    if (!parent.empty())
    {
        fs::create_directories(parent);
    }
    for (size_t r = 0; r < job.ranks.size(); ++r)
    {
        WriteChakraFile(job.ranks[r], prefix + "." + std::to_string(r) + ".et");
    }
    if (job.commGroups.empty())
    {
        return;
    }
    std::ostringstream os;
    os << "{";
    bool firstGroup = true;
    for (const auto& [g, ranks] : job.commGroups)
    {
        os << (firstGroup ? "\n  \"" : ",\n  \"") << g << "\": [";
        for (size_t i = 0; i < ranks.size(); ++i)
        {
            os << (i ? ", " : "") << ranks[i];
        }
        os << "]";
        firstGroup = false;
    }
    os << "\n}\n";
    std::ofstream f(prefix + ".comm_groups.json", std::ios::trunc);
    f << os.str();
    if (!f)
    {
        throw std::runtime_error("cannot write " + prefix + ".comm_groups.json");
    }
}

JobTrace
ImportChakra(const std::string& dirOrPrefix, const ChakraImportOptions& opt)
{
    return ChakraToJobTrace(ReadChakraJob(dirOrPrefix, opt.commGroupsFile), opt.p2p);
}

} // namespace gpusim
} // namespace ns3
