// Kineto traces the tests read. The fixtures in test/data are small traces written by hand to
// the Kineto schema (their timelines, and the expected values derived from them, are in
// test/data/README.md); they ship with the project, so the reader, the execution graph and
// replay are tested on a fresh clone. The real traces in ../shared/data/kineto are larger and
// not part of the project: tests on them skip, saying so, when ../shared is absent.
#ifndef GPUSIM_KINETO_TEST_DATA_H
#define GPUSIM_KINETO_TEST_DATA_H

#include "ns3/kineto-trace.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kineto_test
{

const std::string kFixtureDir = GPUSIM_SOURCE_DIR "/contrib/gpusim/test/data/";
/// Rank 0 and 1 of a 2-rank DDP step: main + autograd thread, compute stream 7, NCCL stream
/// 20, inferred cross-stream pairs, an inter-thread wait; new time format.
const std::string kDdpRank0 = kFixtureDir + "kineto-ddp-rank0.json";
const std::string kDdpRank1 = kFixtureDir + "kineto-ddp-rank1.json";
/// One GPU, two streams, cuda_sync events (stream wait, event sync, context sync), a blocking
/// copy, a flow-linked memset; old time format (integer Unix-epoch microseconds).
const std::string kEventSyncOld = kFixtureDir + "kineto-event-sync-old.json";
/// Rank 0 of a 2-rank job: AllReduce, AllGather, ReduceScatter and AllToAll back to back.
const std::string kCollectives = kFixtureDir + "kineto-collectives.json";

const std::string kSharedDir = GPUSIM_SHARED_DIR "/data/kineto/";

inline bool
SharedTracesPresent()
{
    return std::filesystem::is_directory(kSharedDir);
}

/// Calls `fn` on every raw "X" event of a trace read with simdjson's DOM API: a second
/// reading of the file, independent of the On-Demand reader under test, for expected values
/// on the real traces.
inline void
ForEachRawEvent(const std::string& file, const std::function<void(simdjson::dom::element)>& fn)
{
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(ns3::gpusim::LoadKinetoText(file));
    for (simdjson::dom::element e : doc["traceEvents"].get_array())
    {
        std::string_view ph;
        if (!e["ph"].get(ph) && ph == "X")
        {
            fn(e);
        }
    }
}

/// Number of raw "X" events for which `pred` holds (see ForEachRawEvent).
inline uint64_t
CountRawEvents(const std::string& file, const std::function<bool(simdjson::dom::element)>& pred)
{
    uint64_t n = 0;
    ForEachRawEvent(file, [&](simdjson::dom::element e) { n += pred(e) ? 1 : 0; });
    return n;
}

/// A string field of a raw event ("" when absent).
inline std::string_view
RawStr(simdjson::dom::element e, const char* key)
{
    std::string_view v;
    return e[key].get(v) ? std::string_view() : v;
}

/// True for the raw events of NCCL/RCCL kernels.
inline bool
IsRawNcclKernel(simdjson::dom::element e)
{
    const std::string_view name = RawStr(e, "name");
    return RawStr(e, "cat") == "kernel" &&
           (name.find("nccl") != std::string_view::npos ||
            name.find("rccl") != std::string_view::npos);
}

/// cudaStreamWaitEvent calls of a DDP trace sorted by what the recording shows they did,
/// from a second reading of the file: `into`, the thread's next launch is an NCCL kernel (the
/// NCCL stream waits for compute); `outOf`, the next launch is another op that started only
/// after the last NCCL kernel launched before the wait had ended (compute waits for the
/// collective); the rest held nothing the recording shows.
struct RawNcclWaits
{
    uint64_t waits = 0;
    uint64_t into = 0;
    uint64_t outOf = 0;
};

inline RawNcclWaits
CountRawNcclWaits(const std::string& file, double toleranceUs = 5.0)
{
    struct Call
    {
        double ts;
        int64_t tid;
        bool wait;
        int64_t corr;
    };
    struct Gpu
    {
        double ts;
        double end;
        bool nccl;
    };
    std::vector<Call> calls;
    std::map<int64_t, Gpu> gpu;
    ForEachRawEvent(file, [&](simdjson::dom::element e) {
        const std::string_view cat = RawStr(e, "cat");
        int64_t corr = -1;
        if (e["args"]["correlation"].get(corr))
        {
            corr = -1;
        }
        if (cat == "cuda_runtime")
        {
            calls.push_back({double(e["ts"]), int64_t(e["tid"]),
                             RawStr(e, "name") == "cudaStreamWaitEvent", corr});
        }
        else if ((cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") && corr >= 0)
        {
            const double ts = double(e["ts"]);
            gpu[corr] = {ts, ts + double(e["dur"]), IsRawNcclKernel(e)};
        }
    });
    std::stable_sort(calls.begin(), calls.end(), [](const Call& a, const Call& b) {
        return a.ts < b.ts;
    });
    RawNcclWaits out;
    double lastNcclEnd = -1;
    for (size_t i = 0; i < calls.size(); ++i)
    {
        auto launched = gpu.find(calls[i].corr);
        if (!calls[i].wait)
        {
            if (launched != gpu.end() && launched->second.nccl)
            {
                lastNcclEnd = launched->second.end;
            }
            continue;
        }
        ++out.waits;
        for (size_t j = i + 1; j < calls.size(); ++j)
        {
            auto next = gpu.find(calls[j].corr);
            if (calls[j].tid != calls[i].tid || next == gpu.end())
            {
                continue;
            }
            if (next->second.nccl)
            {
                ++out.into;
            }
            else if (lastNcclEnd >= 0 && next->second.ts + toleranceUs >= lastNcclEnd)
            {
                ++out.outOf;
            }
            break;
        }
    }
    return out;
}

/// Where a real trace of the older Kineto format (2021-22: runtime calls named by cbid, no
/// cudaEventRecord, async_cpu_to_gpu flows; see doc/kineto-replay.md) is: ../shared/data/kineto,
/// else the folder named by GPUSIM_KINETO_EXTRA_DIR (for traces not yet in ../shared); "" when
/// neither has it.
inline std::string
OlderFormatTrace(const std::string& name)
{
    if (std::filesystem::exists(kSharedDir + name))
    {
        return kSharedDir + name;
    }
    const char* extra = std::getenv("GPUSIM_KINETO_EXTRA_DIR");
    if (extra && std::filesystem::exists(std::string(extra) + "/" + name))
    {
        return std::string(extra) + "/" + name;
    }
    return "";
}

/// Per ProfilerStep of a raw trace: the step's length and the time within it during which an
/// NCCL kernel and another GPU op (kernel, copy, memset) ran at once (Lumos' "overlap"),
/// computed from a second reading of the file (simdjson DOM), independent of the replay.
struct RawStepOverlap
{
    std::string name;
    double durUs = 0;
    double overlapUs = 0;
};

inline std::vector<RawStepOverlap>
RecordedStepOverlaps(const std::string& file)
{
    using Interval = std::pair<double, double>;
    std::vector<Interval> comm, compute;
    std::vector<std::pair<std::string, Interval>> steps;
    ForEachRawEvent(file, [&](simdjson::dom::element e) {
        const std::string_view cat = RawStr(e, "cat");
        const std::string_view name = RawStr(e, "name");
        const double ts = double(e["ts"]);
        const double end = ts + double(e["dur"]);
        if (cat == "user_annotation" && name.substr(0, 13) == "ProfilerStep#")
        {
            steps.emplace_back(std::string(name), Interval{ts, end});
        }
        else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset")
        {
            (IsRawNcclKernel(e) ? comm : compute).emplace_back(ts, end);
        }
    });
    auto merge = [](std::vector<Interval> v, Interval window) {
        std::vector<Interval> out;
        std::sort(v.begin(), v.end());
        for (auto [a, b] : v)
        {
            a = std::max(a, window.first);
            b = std::min(b, window.second);
            if (a >= b)
            {
                continue;
            }
            if (!out.empty() && a <= out.back().second)
            {
                out.back().second = std::max(out.back().second, b);
            }
            else
            {
                out.emplace_back(a, b);
            }
        }
        return out;
    };
    std::vector<RawStepOverlap> result;
    std::sort(steps.begin(), steps.end(), [](const auto& x, const auto& y) {
        return x.second.first < y.second.first;
    });
    for (const auto& [name, window] : steps)
    {
        auto c = merge(compute, window);
        auto m = merge(comm, window);
        double both = 0;
        for (size_t i = 0, j = 0; i < c.size() && j < m.size();)
        {
            both += std::max(0.0,
                             std::min(c[i].second, m[j].second) - std::max(c[i].first, m[j].first));
            (c[i].second < m[j].second ? i : j)++;
        }
        result.push_back({name, window.second - window.first, both});
    }
    return result;
}

} // namespace kineto_test

/// Skips the current test when the real traces of ../shared are not there.
#define SKIP_WITHOUT_SHARED_TRACES()                                                          \
    do                                                                                         \
    {                                                                                          \
        if (!kineto_test::SharedTracesPresent())                                               \
        {                                                                                      \
            GTEST_SKIP() << "needs the real Kineto traces in " << kineto_test::kSharedDir      \
                         << " (../shared is not beside this checkout); the fixtures in "       \
                            "contrib/gpusim/test/data cover the same code";                    \
        }                                                                                      \
    } while (false)

#endif // GPUSIM_KINETO_TEST_DATA_H
