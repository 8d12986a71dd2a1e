// Kineto trace reader: gzip/plain JSON -> KinetoTrace, with simdjson On-Demand.
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
    JsonReader(const std::string& name, const char* base, size_t len) :
        m_name(name),
        m_base(base),
        m_len(len)
    {
    }

    [[noreturn]] void Fail(uint64_t offset, const std::string& what) const
    {
        throw TraceFormatError(m_name, offset, "offset " + std::to_string(offset) + ": " + what);
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
                if ((err = std::move(fieldResult).get(field)) ||
                    (err = field.unescaped_key().get(key)))
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

    /// Args keys read as an integer or a string: the field of `ev` each fills (both nullptr
    /// for other keys).
    static void ArgTarget(std::string_view key,
                          KinetoEvent& ev,
                          int64_t*& intTarget,
                          std::string*& strTarget)
    {
        switch (key.empty() ? '\0' : key[0])
        {
        case 'c':
            intTarget = key == "correlation" ? &ev.correlation
                        : key == "cbid"      ? &ev.cbid
                                             : nullptr;
            break;
        case 'd':
            intTarget = key == "device" ? &ev.device : nullptr;
            strTarget = key == "dtype" ? &ev.coll.dtype : nullptr;
            break;
        case 'E':
            intTarget = key == "External id" ? &ev.externalId : nullptr;
            break;
        case 's':
            intTarget = key == "stream" ? &ev.stream : nullptr;
            break;
        case 'w':
            intTarget = key == "wait_on_stream"                      ? &ev.waitOnStream
                        : key == "wait_on_cuda_event_record_corr_id" ? &ev.waitOnRecordCorrelation
                        : key == "wait_on_cuda_event_id"             ? &ev.waitOnEventId
                                                                     : nullptr;
            break;
        case 'C':
            strTarget = key == "Collective name" ? &ev.coll.name : nullptr;
            break;
        case 'I':
            intTarget = key == "In msg nelems" ? &ev.coll.inNelems : nullptr;
            break;
        case 'O':
            intTarget = key == "Out msg nelems" ? &ev.coll.outNelems : nullptr;
            break;
        case 'G':
            intTarget = key == "Group size" ? &ev.coll.groupSize : nullptr;
            break;
        case 'P':
            strTarget = key == "Process Group Name"    ? &ev.coll.pgName
                        : key == "Process Group Ranks" ? &ev.coll.pgRanks
                                                       : nullptr;
            break;
        default:
            break;
        }
    }

    /// The args that are neither a plain integer nor a plain string (bytes, grid, block,
    /// cuda_sync_kind); false for any other key.
    bool ParseSpecialArg(od::document& doc,
                         std::string_view key,
                         od::value& value,
                         KinetoEvent& ev,
                         size_t index)
    {
        simdjson::error_code err = simdjson::SUCCESS;
        if (key == "bytes")
        {
            int64_t b = 0;
            if (!GetInteger(value, b, err))
            {
                FailJson(doc, err, EventCtx(index, "args.bytes"));
            }
            ev.bytes = static_cast<uint64_t>(std::max<int64_t>(0, b));
        }
        else if (key == "block" || key == "grid")
        {
            ParseShape(doc, value, key == "grid" ? ev.grid : ev.block, index);
            ev.hasLaunchShape = true;
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
        else
        {
            return false;
        }
        return true;
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
            if (ParseSpecialArg(doc, key, value, ev, index))
            {
                continue;
            }
            int64_t* intTarget = nullptr;
            std::string* strTarget = nullptr;
            ArgTarget(key, ev, intTarget, strTarget);
            if (intTarget)
            {
                if (!GetInteger(value, *intTarget, err))
                {
                    FailJson(
                        doc, err, EventCtx(index, std::string("args." + std::string(key)).c_str()));
                }
            }
            else if (strTarget)
            {
                std::string_view s;
                if ((err = value.get_string().get(s)))
                {
                    FailJson(
                        doc, err, EventCtx(index, std::string("args." + std::string(key)).c_str()));
                }
                strTarget->assign(s.data(), s.size());
                if (strTarget == &ev.coll.name)
                {
                    ev.coll.present = true;
                }
            }
        }
    }

    /// The fields of one traceEvents entry, as read, until they are checked and stored.
    struct EventFields
    {
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
    };

    void GetStringField(od::document& doc,
                        od::value& value,
                        std::string_view& out,
                        size_t index,
                        const char* field)
    {
        simdjson::error_code err = value.get_string().get(out);
        if (err)
        {
            FailJson(doc, err, EventCtx(index, field));
        }
    }

    void GetNumberField(od::document& doc,
                        od::value& value,
                        double& out,
                        size_t index,
                        const char* field)
    {
        simdjson::error_code err = value.get_double().get(out);
        if (err)
        {
            FailJson(doc, err, EventCtx(index, field) + "not a number: ");
        }
    }

    void GetIdField(od::document& doc,
                    od::value& value,
                    int64_t& out,
                    size_t index,
                    const char* field)
    {
        simdjson::error_code err = simdjson::SUCCESS;
        if (!GetId(value, out, err))
        {
            FailJson(doc, err, EventCtx(index, field));
        }
    }

    /// Reads the fields of one event: ph/cat/name/ts/dur/id into `f`, pid/tid and args into
    /// `ev`. Args are parsed lazily: their meaning depends on ph/cat, which may come later.
    /// Kineto writes ph/cat/name/pid/tid/ts/dur before args, so this is the fast path;
    /// otherwise args are parsed anyway and unused values dropped.
    void ReadEventFields(od::document& doc,
                         od::object& obj,
                         size_t index,
                         EventFields& f,
                         KinetoEvent& ev)
    {
        simdjson::error_code err = simdjson::SUCCESS;
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
                GetStringField(doc, value, f.ph, index, "ph");
                f.hasPh = true;
            }
            else if (key == "cat")
            {
                GetStringField(doc, value, f.cat, index, "cat");
                f.hasCat = true;
            }
            else if (key == "name")
            {
                GetStringField(doc, value, f.name, index, "name");
                f.hasName = true;
            }
            else if (key == "ts")
            {
                GetNumberField(doc, value, f.ts, index, "ts");
                f.hasTs = true;
            }
            else if (key == "dur")
            {
                GetNumberField(doc, value, f.dur, index, "dur");
                f.hasDur = true;
            }
            else if (key == "pid")
            {
                GetIdField(doc, value, ev.pid, index, "pid");
                f.hasPid = true;
            }
            else if (key == "tid")
            {
                GetIdField(doc, value, ev.tid, index, "tid");
                f.hasTid = true;
            }
            else if (key == "id")
            {
                GetIdField(doc, value, f.flowId, index, "id");
                f.hasId = true;
            }
            else if (key == "args")
            {
                // Python events carry no args we use; skip them cheaply.
                if (!(f.hasCat && f.cat == "python_function"))
                {
                    ParseArgs(doc, value, ev, index);
                }
            }
            // The string_views above point into the parser's string buffer, which stays
            // valid until the next document: safe to keep them until the event is stored.
        }
    }

    [[noreturn]] void FailMissing(uint64_t offset,
                                  size_t index,
                                  std::string_view ph,
                                  const char* field) const
    {
        Fail(offset,
             "event " + std::to_string(index) + " (ph '" + std::string(ph) +
                 "'): missing field '" + field + "'");
    }

    /// A complete ("X") event: checked, then kept when its category is one we use.
    void StoreComplete(const EventFields& f,
                       KinetoEvent& ev,
                       uint64_t offset,
                       size_t index,
                       KinetoTrace& out)
    {
        const std::pair<bool, const char*> required[] = {{f.hasName, "name"},
                                                         {f.hasTs, "ts"},
                                                         {f.hasDur, "dur"},
                                                         {f.hasPid, "pid"},
                                                         {f.hasTid, "tid"}};
        for (const auto& [has, field] : required)
        {
            if (!has)
            {
                FailMissing(offset, index, f.ph, field);
            }
        }
        if (!(f.dur >= 0) || !std::isfinite(f.dur) || !std::isfinite(f.ts))
        {
            Fail(offset,
                 "event " + std::to_string(index) + ": negative or invalid duration " +
                     std::to_string(f.dur));
        }
        m_minTs = std::min(m_minTs, f.ts);
        ev.category = f.hasCat ? ParseCategory(f.cat) : KinetoCategory::Other;
        if (ev.category == KinetoCategory::Other)
        {
            ++out.ignoredEvents;
            return;
        }
        ev.name.assign(f.name.data(), f.name.size());
        if (ev.category == KinetoCategory::Runtime && ev.cbid >= 0 && ev.name == "INVALID")
        {
            // Older Kineto named runtime calls from a table fixed at its build; calls of a
            // newer CUDA came out as "INVALID" with only their cbid.
            if (const char* known = KnownRuntimeCbidName(ev.cbid))
            {
                ev.name = known;
            }
        }
        ev.tsUs = f.ts;
        ev.durUs = f.dur;
        out.events.push_back(std::move(ev));
    }

    /// A flow event ("s"/"f"): checked, then kept when it links a launch to GPU work (ac2g or
    /// async_cpu_to_gpu).
    void StoreFlow(const EventFields& f,
                   const KinetoEvent& ev,
                   uint64_t offset,
                   size_t index,
                   KinetoTrace& out)
    {
        if (!f.hasTs)
        {
            FailMissing(offset, index, f.ph, "ts");
        }
        if (!f.hasId)
        {
            FailMissing(offset, index, f.ph, "id");
        }
        if (!f.hasPid || !f.hasTid)
        {
            FailMissing(offset, index, f.ph, f.hasPid ? "tid" : "pid");
        }
        if (!std::isfinite(f.ts))
        {
            Fail(offset, "event " + std::to_string(index) + ": invalid ts");
        }
        // "async_cpu_to_gpu" is what Kineto of 2021-22 called the category.
        if (!(f.hasCat && (f.cat == "ac2g" || f.cat == "async_cpu_to_gpu")))
        {
            ++out.ignoredEvents;
            return;
        }
        KinetoFlow flow;
        flow.start = f.ph == "s";
        flow.id = f.flowId;
        flow.pid = ev.pid;
        flow.tid = ev.tid;
        flow.tsUs = f.ts;
        out.flows.push_back(flow);
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
            EventFields f;
            ReadEventFields(doc, obj, index, f, ev);
            if (!f.hasPh)
            {
                Fail(offset, "event " + std::to_string(index) + ": missing field 'ph'");
            }
            if (f.ph == "X")
            {
                StoreComplete(f, ev, offset, index, out);
            }
            else if (f.ph == "s" || f.ph == "f")
            {
                StoreFlow(f, ev, offset, index, out);
            }
            else if (f.hasTs && !std::isfinite(f.ts))
            {
                // Metadata ("M"), instants ("i") and anything else carry no dependency; the
                // timestamp is checked when present so garbage does not pass silently.
                Fail(offset, "event " + std::to_string(index) + ": invalid ts");
            }
            else
            {
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

namespace
{

/// Guess of the uncompressed size: the gzip trailer's ISIZE (size mod 2^32 of the last member,
/// exact for the usual single-member .gz below 4 GiB) or the file size for plain text.
size_t
ExpectedTextSize(const std::string& path)
{
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f)
    {
        return 0;
    }
    unsigned char magic[2] = {0, 0};
    size_t guess = 0;
    if (std::fread(magic, 1, 2, f) == 2 && std::fseek(f, 0, SEEK_END) == 0)
    {
        long fileSize = std::ftell(f);
        unsigned char trailer[4];
        if (magic[0] == 0x1f && magic[1] == 0x8b && fileSize >= 18 &&
            std::fseek(f, -4, SEEK_END) == 0 && std::fread(trailer, 1, 4, f) == 4)
        {
            uint32_t isize = trailer[0] | (trailer[1] << 8) | (trailer[2] << 16) |
                             (static_cast<uint32_t>(trailer[3]) << 24);
            // A damaged or multi-member file may lie: deflate expands at most ~1032:1, and
            // the read loop grows the buffer when the guess is short.
            uint64_t bound = static_cast<uint64_t>(fileSize) * 1032;
            guess = static_cast<size_t>(std::min<uint64_t>(isize, bound)) + 1;
        }
        else if (fileSize > 0)
        {
            guess = static_cast<size_t>(fileSize) + 1;
        }
    }
    std::fclose(f);
    return guess;
}

} // namespace

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
    // Size the buffer once: growing a multi-MB string by doubling costs more (copies and page
    // faults) than inflating it.
    size_t capacity = std::max<size_t>(ExpectedTextSize(path), 1 << 16);
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
    NS_LOG_INFO("read " << name << ": " << trace.events.size() << " events, " << trace.flows.size()
                        << " flows, rank " << trace.rank);
    return trace;
}

KinetoTrace
ReadKinetoTrace(const std::string& path)
{
    std::string text = LoadKinetoText(path);
    return ParseKinetoJson(text, path);
}

} // namespace gpusim
} // namespace ns3
