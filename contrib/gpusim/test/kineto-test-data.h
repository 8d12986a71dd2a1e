// Kineto traces the tests read. The fixtures in test/data are small traces written by hand to
// the Kineto schema (their timelines, and the expected values derived from them, are in
// test/data/README.md); they ship with the project, so the reader, the execution graph and
// replay are tested on a fresh clone. The real traces in ../shared/data/kineto are larger and
// not part of the project: tests on them skip, saying so, when ../shared is absent.
#ifndef GPUSIM_KINETO_TEST_DATA_H
#define GPUSIM_KINETO_TEST_DATA_H

#include "ns3/kineto-trace.h"

#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <string>
#include <string_view>

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
