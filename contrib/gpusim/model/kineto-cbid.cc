// Names of CUDA runtime calls by CUPTI callback id, for traces whose Kineto could not name them.
#include "ns3/kineto-trace.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace ns3
{
namespace gpusim
{

namespace
{

/// Ids from CUPTI's cupti_runtime_cbid.h (CUPTI_RUNTIME_TRACE_CBID_<name>_v<version>). CUPTI
/// only appends to that enum, so an id means the same call in every CUDA release. Listed: the
/// calls ClassifyCall and the launch lookup care about (records, waits, syncs, copies, memsets,
/// launches) and the stream-capture queries NCCL and PyTorch make on every collective, which
/// Kineto tables of CUDA 11.2 (used until 2022) printed as "INVALID". Sorted by id.
constexpr std::pair<int64_t, const char*> kRuntimeCbids[] = {
    {31, "cudaMemcpy"},
    {41, "cudaMemcpyAsync"},
    {49, "cudaMemset"},
    {51, "cudaMemsetAsync"},
    {126, "cudaThreadSynchronize"},
    {131, "cudaStreamSynchronize"},
    {135, "cudaEventRecord"},
    {137, "cudaEventSynchronize"},
    {138, "cudaEventQuery"},
    {147, "cudaStreamWaitEvent"},
    {165, "cudaDeviceSynchronize"},
    {211, "cudaLaunchKernel"},
    {214, "cudaLaunchKernel_ptsz"},
    {215, "cudaMemcpy_ptds"},
    {225, "cudaMemcpyAsync_ptsz"},
    {233, "cudaMemset_ptds"},
    {235, "cudaMemsetAsync_ptsz"},
    {239, "cudaStreamSynchronize_ptsz"},
    {242, "cudaEventRecord_ptsz"},
    {247, "cudaStreamWaitEvent_ptsz"},
    {269, "cudaLaunchCooperativeKernel"},
    {270, "cudaLaunchCooperativeKernel_ptsz"},
    {311, "cudaGraphLaunch"},
    {312, "cudaGraphLaunch_ptsz"},
    {324, "cudaStreamGetCaptureInfo"},
    {325, "cudaStreamGetCaptureInfo_ptsz"},
    {370, "cudaEventRecordWithFlags"},
    {371, "cudaEventRecordWithFlags_ptsz"},
    {409, "cudaStreamGetCaptureInfo_v2"},
    {410, "cudaStreamGetCaptureInfo_v2_ptsz"},
    {411, "cudaStreamUpdateCaptureDependencies"},
    {412, "cudaStreamUpdateCaptureDependencies_ptsz"},
    {430, "cudaLaunchKernelExC"},
    {431, "cudaLaunchKernelExC_ptsz"},
};

} // namespace

const char*
KnownRuntimeCbidName(int64_t cbid)
{
    auto it = std::lower_bound(std::begin(kRuntimeCbids),
                               std::end(kRuntimeCbids),
                               cbid,
                               [](const std::pair<int64_t, const char*>& e, int64_t id) {
                                   return e.first < id;
                               });
    return it != std::end(kRuntimeCbids) && it->first == cbid ? it->second : nullptr;
}

} // namespace gpusim
} // namespace ns3
