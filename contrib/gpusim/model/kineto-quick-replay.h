/*
 * A small, self-contained replay of one rank's Op IR with recorded durations: host threads
 * pay cpu_us and issue ops in order, streams run GPU work in order for its recorded duration,
 * waits (syncs, cross-stream events, cross-thread tokens) are honoured. It exists to check the
 * Kineto conversion before (and later against) the ns-3 engine.
 */
#ifndef GPUSIM_KINETO_QUICK_REPLAY_H
#define GPUSIM_KINETO_QUICK_REPLAY_H

#include "ns3/op-ir.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// One marker range (e.g. ProfilerStep#5): recorded vs replayed length.
struct QuickReplayIteration
{
    std::string name;
    double recordedUs = 0;  //!< end.recordedUs - begin.recordedUs
    double simulatedUs = 0; //!< replayed end - replayed begin
    double beginUs = 0;     //!< replayed begin time

    /// Relative error in percent (simulated vs recorded).
    double ErrorPct() const
    {
        return recordedUs > 0 ? 100.0 * (simulatedUs - recordedUs) / recordedUs : 0.0;
    }
};

/// Result of ReplayRecordedDurations().
struct QuickReplayResult
{
    std::vector<QuickReplayIteration> iterations; //!< ProfilerStep-like marker ranges, in order
    double makespanUs = 0;                        //!< time when the last host op or GPU op finished
    uint64_t opsExecuted = 0;
    std::vector<double> startUs; //!< per op of the RankTrace: GPU start (device ops) or issue time
    std::vector<double> endUs;   //!< per op: GPU end (device ops) or when the host continued
    bool complete = true;        //!< false: some thread waited forever (reported in `stuck`)
    std::string stuck;
};

/// Replays one rank with recorded durations (kernels, copies and NCCL collectives use durUs).
QuickReplayResult ReplayRecordedDurations(const RankTrace& rank);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_KINETO_QUICK_REPLAY_H
