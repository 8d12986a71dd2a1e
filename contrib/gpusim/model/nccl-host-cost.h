/*
 * What NCCL spends on the host CPU per call, one definition for the shim (shim/src/host-cost.cc
 * charges it to a live program's virtual clock) and for the model (`gpusim validate` bounds an
 * nccl-tests iteration by it). A plain header, included by the shim too (C++17, no ns-3).
 * Sources and measurements: doc/host-costs.md.
 */
#ifndef GPUSIM_NCCL_HOST_COST_H
#define GPUSIM_NCCL_HOST_COST_H

namespace gpusim_host_cost
{

/// An NCCL collective, send or recv call: it only queues a task (NVIDIA/nccl issue #1984: 100
/// grouped all-reduces on 4 communicators, 3.5 us per op: at most 0.9 us per op and
/// communicator).
constexpr double kNcclEnqueueUs = 0.5;

/// Launching one communicator's kernel at ncclGroupEnd, or at an ungrouped call (NVIDIA/nccl
/// src/enqueue.cc: two event records, two stream waits and one cuLaunchKernelEx), composed
/// from the calls timed on an H200 host: 2 x (0.15 + 0.14) + 3.8 us.
constexpr double kNcclLaunchUs = 4.4;

} // namespace gpusim_host_cost

#endif // GPUSIM_NCCL_HOST_COST_H
