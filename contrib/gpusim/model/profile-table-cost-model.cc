#include "ns3/profile-table-cost-model.h"

#include "ns3/boolean.h"
#include "ns3/json-writer.h"
#include "ns3/log.h"
#include "ns3/string.h"

#include <simdjson.h>

#include <algorithm>
#include <functional>
#include <vector>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ProfileTableCostModel");
NS_OBJECT_ENSURE_REGISTERED(ProfileTableCostModel);

namespace gpusim
{

namespace
{

KernelTable::GemmKey
KeyOf(const GemmShape& g)
{
    return {g.m, g.n, g.k, g.batch, g.dtype};
}

} // namespace

double
KernelTable::Lookup(const Op& op) const
{
    if (op.kind != OpKind::Kernel)
    {
        return -1;
    }
    if (op.gemm.m)
    {
        const GemmKey key = KeyOf(op.gemm);
        auto named = byNamedGemm.find({op.name, key});
        if (named != byNamedGemm.end())
        {
            return named->second;
        }
        // A fused attention kernel's shape is its geometry, not a GEMM's: only its own name
        // matches it.
        bool backward = false;
        auto any = KernelCostModel::IsFusedAttention(op.name, backward) ? byGemm.end()
                                                                          : byGemm.find(key);
        if (any != byGemm.end())
        {
            return any->second;
        }
    }
    else
    {
        auto it = byLaunch.find({op.name, op.grid, op.block});
        if (it != byLaunch.end())
        {
            return it->second;
        }
    }
    auto it = byName.find(op.name);
    return it == byName.end() ? -1 : it->second;
}

namespace
{

/// Throws the table's format error for one entry (`where` names it).
using TableFail = std::function<void(const std::string&)>;

/// The entry's "dur_us" (a non-negative number, integer or not).
double
EntryDuration(simdjson::dom::object k, const std::string& where, const TableFail& fail)
{
    double dur = -1;
    if (k["dur_us"].get_double().get(dur) != simdjson::SUCCESS)
    {
        int64_t i = 0;
        if (k["dur_us"].get_int64().get(i) != simdjson::SUCCESS)
        {
            fail(where + "missing number 'dur_us'");
        }
        dur = static_cast<double>(i);
    }
    if (!(dur >= 0))
    {
        fail(where + "'dur_us' must not be negative");
    }
    return dur;
}

/// Reads "grid" or "block" (3 positive integers) into `out`; false when absent.
bool
EntryDim3(simdjson::dom::object k, const char* key, KernelTable::Dim3& out,
          const std::string& where, const TableFail& fail)
{
    simdjson::dom::element d;
    if (k[key].get(d) != simdjson::SUCCESS)
    {
        return false;
    }
    simdjson::dom::array arr;
    if (d.get_array().get(arr) != simdjson::SUCCESS || arr.size() != 3)
    {
        fail(where + "'" + key + "' must be an array of 3 integers");
    }
    size_t i = 0;
    for (auto v : arr)
    {
        uint64_t u = 0;
        if (v.get_uint64().get(u) != simdjson::SUCCESS || u == 0 || u > UINT32_MAX)
        {
            fail(where + "'" + key + "' must hold 3 positive integers");
        }
        out[i++] = static_cast<uint32_t>(u);
    }
    return true;
}

/// The entry's "gemm" object: positive m, n, k, optional batch and dtype (default bf16).
GemmShape
EntryGemm(simdjson::dom::object g, const std::string& where, const TableFail& fail)
{
    GemmShape shape;
    uint64_t v = 0;
    const std::pair<const char*, uint64_t*> dims[] = {{"m", &shape.m},
                                                      {"n", &shape.n},
                                                      {"k", &shape.k}};
    for (auto [key, field] : dims)
    {
        if (g[key].get_uint64().get(v) != simdjson::SUCCESS || v == 0)
        {
            fail(where + "'gemm' needs positive integer '" + key + "'");
        }
        *field = v;
    }
    if (g["batch"].get_uint64().get(v) == simdjson::SUCCESS)
    {
        shape.batch = v;
    }
    std::string_view dt = "bf16";
    simdjson::dom::element dtype;
    if (g["dtype"].get(dtype) == simdjson::SUCCESS &&
        dtype.get_string().get(dt) != simdjson::SUCCESS)
    {
        fail(where + "'gemm' dtype must be a string");
    }
    if (!ParseDataType(std::string(dt), shape.dtype))
    {
        fail(where + "unknown gemm dtype '" + std::string(dt) + "'");
    }
    return shape;
}

/// Adds one entry of "kernels" to the table under its key (named GEMM, GEMM shape, launch
/// shape or name); a key seen before is an error.
void
AddEntry(simdjson::dom::element e, KernelTable& table, const std::string& where,
         const TableFail& fail)
{
    simdjson::dom::object k;
    if (e.get_object().get(k) != simdjson::SUCCESS)
    {
        fail(where + "each entry is an object");
    }
    const double dur = EntryDuration(k, where, fail);
    std::string name;
    std::string_view sv;
    const bool hasName = k["name"].get_string().get(sv) == simdjson::SUCCESS;
    if (hasName)
    {
        name = std::string(sv);
    }
    KernelTable::Dim3 grid{1, 1, 1};
    KernelTable::Dim3 block{1, 1, 1};
    const bool hasGrid = EntryDim3(k, "grid", grid, where, fail);
    const bool hasBlock = EntryDim3(k, "block", block, where, fail);
    simdjson::dom::object g;
    const bool hasGemm = k["gemm"].get_object().get(g) == simdjson::SUCCESS;
    bool fresh = false;
    if (hasGemm)
    {
        if (hasGrid || hasBlock)
        {
            fail(where + "give either 'gemm' or 'grid'/'block', not both");
        }
        const GemmShape shape = EntryGemm(g, where, fail);
        fresh = hasName ? table.byNamedGemm.emplace(std::pair{name, KeyOf(shape)}, dur).second
                        : table.byGemm.emplace(KeyOf(shape), dur).second;
    }
    else if (!hasName)
    {
        fail(where + "needs 'name' or 'gemm'");
    }
    else if (hasGrid || hasBlock)
    {
        fresh = table.byLaunch.emplace(std::tuple{name, grid, block}, dur).second;
    }
    else
    {
        fresh = table.byName.emplace(name, dur).second;
    }
    if (!fresh)
    {
        fail(where + "duplicate key (an earlier entry has the same name and shape)");
    }
}

} // namespace

KernelTable
LoadKernelTable(const std::string& file)
{
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    auto err = parser.load(file).get(doc);
    if (err)
    {
        throw TraceFormatError(file, 0, std::string("cannot read kernel table: ") +
                                            simdjson::error_message(err));
    }
    const TableFail fail = [&](const std::string& why) { throw TraceFormatError(file, 0, why); };
    simdjson::dom::object root;
    if (doc.get_object().get(root) != simdjson::SUCCESS)
    {
        fail("a kernel table is a JSON object");
    }
    std::string_view format;
    if (root["format"].get_string().get(format) != simdjson::SUCCESS ||
        format != "gpusim-kernel-table")
    {
        fail("'format' must be \"gpusim-kernel-table\"");
    }
    uint64_t version = 0;
    if (root["version"].get_uint64().get(version) != simdjson::SUCCESS || version != 1)
    {
        fail("'version' must be 1");
    }
    KernelTable table;
    std::string_view gpu;
    if (root["gpu"].get_string().get(gpu) == simdjson::SUCCESS)
    {
        table.gpu = std::string(gpu);
    }
    simdjson::dom::array kernels;
    if (root["kernels"].get_array().get(kernels) != simdjson::SUCCESS)
    {
        fail("missing array 'kernels'");
    }
    size_t index = 0;
    for (simdjson::dom::element e : kernels)
    {
        AddEntry(e, table, "kernels[" + std::to_string(index++) + "]: ", fail);
    }
    return table;
}

std::string
KernelTableTemplate(const JobTrace& job, const GpuSpec& gpu, const std::string& gpuName)
{
    struct Entry
    {
        const Op* op; //!< first launch with this key
        uint64_t launches = 0;
    };
    // Keyed like the table; ordered containers keep the output deterministic.
    std::map<std::tuple<std::string, KernelTable::Dim3, KernelTable::Dim3>, Entry> launches;
    std::map<std::pair<std::string, KernelTable::GemmKey>, Entry> gemms;
    for (const auto& rank : job.ranks)
    {
        const auto& ops = rank.opsFrom >= 0 ? job.ranks[rank.opsFrom].ops : rank.ops;
        for (const Op& op : ops)
        {
            if (op.kind != OpKind::Kernel)
            {
                continue;
            }
            Entry& e = op.gemm.m ? gemms[{op.name, KeyOf(op.gemm)}]
                                 : launches[{op.name, op.grid, op.block}];
            if (!e.launches++)
            {
                e.op = &op;
            }
        }
    }
    std::vector<Entry> all;
    for (const auto& [key, e] : launches)
    {
        all.push_back(e);
    }
    for (const auto& [key, e] : gemms)
    {
        all.push_back(e);
    }
    std::stable_sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
        return a.launches > b.launches;
    });
    Ptr<RooflineCostModel> roofline = CreateObject<RooflineCostModel>();
    // One entry per line: this file is meant to be edited by hand or by a script.
    JsonWriter head;
    head.String(gpuName);
    std::string text = "{\"format\": \"gpusim-kernel-table\", \"version\": 1, \"gpu\": " +
                       head.Take() + ",\n \"kernels\": [";
    for (size_t i = 0; i < all.size(); ++i)
    {
        const Op& op = *all[i].op;
        Op shape = op;
        shape.durUs = -1; // the estimate, not a recorded time
        JsonWriter w;
        w.BeginObject().Key("name").String(op.name);
        if (op.gemm.m)
        {
            w.Key("gemm").BeginObject();
            w.Key("m").Uint(op.gemm.m).Key("n").Uint(op.gemm.n).Key("k").Uint(op.gemm.k);
            w.Key("batch").Uint(op.gemm.batch).Key("dtype").String(ToString(op.gemm.dtype));
            w.EndObject();
        }
        else
        {
            w.Key("grid").BeginArray().Uint(op.grid[0]).Uint(op.grid[1]).Uint(op.grid[2]);
            w.EndArray();
            w.Key("block").BeginArray().Uint(op.block[0]).Uint(op.block[1]).Uint(op.block[2]);
            w.EndArray();
        }
        w.Key("dur_us").Fixed(roofline->GetDuration(shape, gpu).GetNanoSeconds() / 1e3, 3);
        w.Key("estimated").Bool(true).Key("launches").Uint(all[i].launches);
        w.EndObject();
        text += (i ? ",\n  " : "\n  ") + w.Take();
    }
    return text + "\n]}\n";
}

} // namespace gpusim

TypeId
ProfileTableCostModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::ProfileTableCostModel")
            .SetParent<KernelCostModel>()
            .SetGroupName("Gpusim")
            .AddConstructor<ProfileTableCostModel>()
            .AddAttribute("TableFile",
                          "Kernel table (JSON, doc/record-simulate.md) loaded when set",
                          StringValue(""),
                          MakeStringAccessor(&ProfileTableCostModel::SetTableFile,
                                             &ProfileTableCostModel::GetTableFile),
                          MakeStringChecker())
            .AddAttribute("UseRecorded",
                          "For kernels not in the table, use the recorded dur_us when the op "
                          "carries one before falling back to the roofline",
                          BooleanValue(true),
                          MakeBooleanAccessor(&ProfileTableCostModel::m_useRecorded),
                          MakeBooleanChecker());
    return tid;
}

ProfileTableCostModel::ProfileTableCostModel()
    : m_useRecorded(true),
      m_hits(0),
      m_misses(0)
{
}

ProfileTableCostModel::~ProfileTableCostModel() = default;

void
ProfileTableCostModel::SetTableFile(std::string file)
{
    m_file = file;
    if (!file.empty())
    {
        LoadTable(file);
    }
}

std::string
ProfileTableCostModel::GetTableFile() const
{
    return m_file;
}

void
ProfileTableCostModel::LoadTable(const std::string& file)
{
    m_table = gpusim::LoadKernelTable(file);
    m_file = file;
    NS_LOG_INFO("kernel table " << file << ": " << m_table.Size() << " entries");
}

void
ProfileTableCostModel::SetTable(const gpusim::KernelTable& table)
{
    m_table = table;
}

const gpusim::KernelTable&
ProfileTableCostModel::GetTable() const
{
    return m_table;
}

uint64_t
ProfileTableCostModel::GetHits() const
{
    return m_hits;
}

uint64_t
ProfileTableCostModel::GetMisses() const
{
    return m_misses;
}

double
ProfileTableCostModel::DoGetSeconds(const gpusim::Op& op, const gpusim::GpuSpec& spec) const
{
    if (op.kind == gpusim::OpKind::Kernel)
    {
        const double us = m_table.Lookup(op);
        if (us >= 0)
        {
            ++m_hits;
            return us * 1e-6;
        }
        ++m_misses;
        NS_LOG_LOGIC("not in the kernel table: " << op.name);
    }
    if (m_useRecorded && op.durUs >= 0)
    {
        return op.durUs * 1e-6;
    }
    return RooflineSeconds(op, spec);
}

} // namespace ns3
