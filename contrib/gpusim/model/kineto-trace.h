/*
 * Kineto (PyTorch profiler) trace reader, execution graph and conversion to the Op IR.
 *
 * ReadKinetoTrace() parses a Chrome-trace JSON file written by the PyTorch profiler (gzip or
 * plain) with simdjson. BuildKinetoGraph() derives the four dependency kinds between the
 * recorded events (CPU->CPU, CPU->GPU, GPU->CPU, GPU->GPU). KinetoToRankTrace() turns one
 * trace into the per-thread Op lists of the gpusim Op IR. See doc/kineto-replay.md.
 */
#ifndef GPUSIM_KINETO_TRACE_H
#define GPUSIM_KINETO_TRACE_H

#include "ns3/op-ir.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// Event category (the "cat" field), with CUDA and ROCm spellings folded together.
enum class KinetoCategory : uint8_t
{
    CpuOp,             //!< cpu_op (ATen operator)
    Runtime,           //!< cuda_runtime (also used by ROCm traces for hip* calls)
    Driver,            //!< cuda_driver
    Kernel,            //!< kernel
    Memcpy,            //!< gpu_memcpy
    Memset,            //!< gpu_memset
    UserAnnotation,    //!< user_annotation (record_function ranges, ProfilerStep#N)
    GpuUserAnnotation, //!< gpu_user_annotation
    CudaSync,          //!< cuda_sync (recorded with enable_cuda_sync_events)
    Other,             //!< anything else that is kept (never used for dependencies)
};

/// Kind of a cuda_sync event ("cuda_sync_kind").
enum class KinetoSyncKind : uint8_t
{
    None,
    StreamSync,      //!< "Stream Sync"
    EventSync,       //!< "Event Sync"
    ContextSync,     //!< "Context Sync"
    StreamWaitEvent, //!< "Stream Wait Event"
    Unknown,
};

/// Collective metadata PyTorch attaches to NCCL kernels and record_param_comms ops.
struct KinetoCollectiveArgs
{
    bool present = false;   //!< true when "Collective name" was found
    std::string name;       //!< "Collective name", e.g. "allreduce", "_allgather_base"
    std::string dtype;      //!< "dtype", e.g. "Float", "BFloat16"
    std::string pgName;     //!< "Process Group Name"
    std::string pgRanks;    //!< "Process Group Ranks", e.g. "[0, 1]"
    int64_t inNelems = -1;  //!< "In msg nelems"
    int64_t outNelems = -1; //!< "Out msg nelems"
    int64_t groupSize = -1; //!< "Group size"
};

/// One complete ("X") or instant ("i") event that the reader keeps.
struct KinetoEvent
{
    KinetoCategory category = KinetoCategory::Other;
    std::string name;
    double tsUs = 0;  //!< start, microseconds from KinetoTrace::startUs
    double durUs = 0; //!< duration, microseconds (>= 0)
    int64_t pid = 0;  //!< process id (CPU events) or device (GPU events)
    int64_t tid = 0;  //!< thread id (CPU events) or stream (GPU events)
    int64_t correlation = -1;
    int64_t externalId = -1;
    int64_t device = -1; //!< args.device (GPU events)
    int64_t stream = -1; //!< args.stream (GPU and cuda_sync events)
    bool hasLaunchShape = false;
    std::array<uint32_t, 3> grid{1, 1, 1};
    std::array<uint32_t, 3> block{1, 1, 1};
    uint64_t bytes = 0; //!< args.bytes (memcpy / memset)
    KinetoSyncKind syncKind = KinetoSyncKind::None;
    int64_t waitOnStream = -1;            //!< args.wait_on_stream
    int64_t waitOnRecordCorrelation = -1; //!< args.wait_on_cuda_event_record_corr_id
    int64_t waitOnEventId = -1;           //!< args.wait_on_cuda_event_id
    int64_t cbid = -1;                    //!< args.cbid (CUPTI callback id of runtime calls)
    KinetoCollectiveArgs coll;
    uint64_t offset = 0; //!< byte offset of the event object in the (uncompressed) JSON

    double EndUs() const { return tsUs + durUs; }
    bool IsGpu() const;
    bool IsHost() const;
};

/// A flow event (ph "s" = start, "f" = finish) of category ac2g (launch -> GPU activity).
struct KinetoFlow
{
    bool start = true;
    int64_t id = 0;
    int64_t pid = 0;
    int64_t tid = 0;
    double tsUs = 0;
};

/// Per-device properties from "deviceProperties" (the subset the simulator uses).
struct KinetoDeviceProperties
{
    int64_t id = 0;
    std::string name;
    int64_t numSms = 0;
    uint64_t totalGlobalMem = 0;
    int64_t computeMajor = 0;
    int64_t computeMinor = 0;
};

/// Everything the reader keeps from one trace file.
struct KinetoTrace
{
    std::string file;          //!< path or name used in error messages
    uint64_t jsonBytes = 0;    //!< size of the uncompressed JSON
    bool relativeTime = false; //!< true: new format (float us relative to baseTimeNanoseconds)
    int64_t baseTimeNs = -1;   //!< "baseTimeNanoseconds", -1 if absent
    double startUs = 0;        //!< raw ts of the earliest event; every tsUs is relative to it
    int64_t rank = -1;         //!< distributedInfo.rank, -1 if absent
    int64_t worldSize = 1;     //!< distributedInfo.world_size (1 if absent)
    std::vector<KinetoDeviceProperties> devices;
    std::vector<KinetoEvent> events; //!< sorted by (tsUs, longer first, file order)
    std::vector<KinetoFlow> flows;   //!< ac2g flow events
    uint64_t ignoredEvents = 0;      //!< python_function, metadata and other unused events

    /// Absolute start of the trace in microseconds since the Unix epoch (when known).
    double AbsoluteStartUs() const;
};

/// Reads a Kineto trace from a .json.gz (any gzip) or plain .json file. Throws TraceFormatError.
KinetoTrace ReadKinetoTrace(const std::string& path);

/// Reads a whole file, decompressing gzip, into a string whose capacity leaves the padding
/// simdjson needs after the text. Throws TraceFormatError (truncated or corrupt gzip).
std::string LoadKinetoText(const std::string& path);

/// CUPTI's name of a runtime call from its callback id (cupti_runtime_cbid.h), for the calls
/// whose role the graph needs and those older Kineto printed as "INVALID" (ids past the end of
/// its name table, e.g. 409 = cudaStreamGetCaptureInfo_v2). nullptr for other ids.
const char* KnownRuntimeCbidName(int64_t cbid);

/// Parses Kineto JSON text already in memory; name is used in error messages. Parsing is
/// copy-free when json.capacity() leaves simdjson's padding (as LoadKinetoText does).
/// Throws TraceFormatError whose line is the byte offset of the problem.
KinetoTrace ParseKinetoJson(const std::string& json, const std::string& name);

/// The four dependency kinds of the execution graph.
enum class DepKind : uint8_t
{
    CpuCpu, //!< host op -> host op (program order per thread, inter-thread gap rule)
    CpuGpu, //!< runtime launch -> kernel / memcpy / memset (same args.correlation)
    GpuCpu, //!< GPU op -> blocking runtime call (stream/event/device sync, sync memcpy)
    GpuGpu, //!< GPU op -> GPU op (stream order, cross-stream event waits)
};

/// Finer classification of an edge, for statistics and tests.
enum class DepDetail : uint8_t
{
    ProgramOrder, //!< consecutive top-level host ops of one thread
    InterThread,  //!< gap rule: a long idle gap waits for the latest op of another thread
    Launch,       //!< CPU -> GPU by correlation
    StreamSync,   //!< cudaStreamSynchronize
    EventSync,    //!< cudaEventSynchronize
    DeviceSync,   //!< cudaDeviceSynchronize
    SyncCopy,     //!< blocking cudaMemcpy (or async D2H into pageable memory)
    InStream,     //!< consecutive GPU ops of one stream
    CrossStream,  //!< cudaEventRecord on stream A -> cudaStreamWaitEvent on stream B
};

/// One edge between two events (indices into KinetoTrace::events).
struct KinetoDependency
{
    uint32_t from = 0;
    uint32_t to = 0;
    DepKind kind = DepKind::CpuCpu;
    DepDetail detail = DepDetail::ProgramOrder;
};

/// Which dependency kinds to build (ablation) and the inter-thread gap threshold.
struct KinetoGraphOptions
{
    double gapThresholdUs = 1000; //!< inter-thread rule threshold (Chakra uses 1000 us)
    bool cpuCpu = true; //!< false: no inter-thread edges (program order within a thread stays)
    bool cpuGpu = true; //!< false: GPU work does not wait for its launch call
    bool gpuCpu = true; //!< false: synchronising calls do not wait for the GPU
    bool gpuGpu = true; //!< false: no cross-stream edges (stream order stays)
};

/// Number of edges of each kind.
struct KinetoDependencyCounts
{
    uint64_t cpuCpu = 0;
    uint64_t cpuGpu = 0;
    uint64_t gpuCpu = 0;
    uint64_t gpuGpu = 0;
    uint64_t interThread = 0;             //!< part of cpuCpu
    uint64_t crossStream = 0;             //!< part of gpuGpu
    uint64_t crossStreamFromCudaSync = 0; //!< cross-stream edges taken from cuda_sync events
    uint64_t crossStreamInferred = 0;     //!< cross-stream edges inferred from call order
};

/// How cross-stream (event record -> stream wait) pairs were found.
enum class CrossStreamMethod : uint8_t
{
    None,     //!< the trace has no cross-stream waits
    CudaSync, //!< every pair came from cuda_sync "Stream Wait Event" events
    Inferred, //!< every pair was inferred from the order of runtime calls
    Mixed,    //!< some of each
};

const char* ToString(CrossStreamMethod m);
const char* ToString(DepKind k);

/// A cudaEventRecord -> cudaStreamWaitEvent pair crossing streams.
struct KinetoCrossStreamLink
{
    uint32_t recordCall = 0; //!< cudaEventRecord call (the wait call itself when none is traced)
    uint32_t waitCall = 0;   //!< runtime event of cudaStreamWaitEvent
    int64_t recordStream = -1;
    int64_t waitStream = -1;
    int64_t fromGpu = -1; //!< last GPU op on recordStream launched before the record
    int64_t toGpu = -1;   //!< first GPU op on waitStream launched after the wait
    bool fromCudaSync = false;
};

/// A host call that blocks until GPU work is done.
struct KinetoSyncLink
{
    uint32_t call = 0; //!< runtime event index
    DepDetail what = DepDetail::StreamSync;
    int64_t stream = -1;           //!< awaited stream (StreamSync, EventSync, SyncCopy)
    int64_t recordCall = -1;       //!< EventSync: the cudaEventRecord being waited for
    std::vector<uint32_t> awaited; //!< GPU ops the call waited for (one per stream)
    double awaitedEndUs = -1;      //!< latest end of the awaited ops (recorded), -1 if none
};

/// An inter-thread edge by the gap rule: `to` (on one thread) waits for `from` (another).
struct KinetoThreadLink
{
    uint32_t from = 0;     //!< latest top-level op of another thread ending in the gap
    uint32_t to = 0;       //!< first top-level op after the gap
    double idleFromUs = 0; //!< end of the previous top-level op of `to`'s thread
};

/// The execution graph of one trace.
struct KinetoGraph
{
    KinetoGraphOptions options;
    std::vector<KinetoDependency> deps;
    KinetoDependencyCounts counts;
    CrossStreamMethod crossStreamMethod = CrossStreamMethod::None;
    std::vector<int64_t> parent;   //!< per event: enclosing host op (same thread), -1 if none
    std::vector<int64_t> launchOf; //!< per event: launching runtime call for GPU ops, else -1
    std::vector<KinetoCrossStreamLink> crossStream;
    std::vector<KinetoSyncLink> syncs;
    std::vector<KinetoThreadLink> threadLinks;
    uint64_t orphanGpuOps = 0; //!< GPU ops whose launch call is not in the trace

    bool IsTopLevel(uint32_t i) const { return parent[i] < 0; }
};

/// Builds the execution graph of a trace.
KinetoGraph BuildKinetoGraph(const KinetoTrace& trace, const KinetoGraphOptions& options = {});

/// Op IR stream id given to a recorded stream 0 (ROCm's null stream): in the IR, 0 is the
/// legacy default stream with implicit synchronisation, which a recording must not get twice.
constexpr int64_t kKinetoNullStreamId = 0x7fffffff;

/// Converts one trace (one rank) into the Op IR. Ops of each host thread appear in issue
/// order; the RankTrace's ops are sorted by thread, then issue order.
RankTrace KinetoToRankTrace(const KinetoTrace& trace, const KinetoGraph& graph);

/// What ReadKinetoJob() found in one file (for reports such as `gpusim replay`).
struct KinetoFileSummary
{
    std::string file;
    int64_t rank = -1;     //!< rank the file was assigned
    int64_t worldSize = 1; //!< distributedInfo.world_size (1 if absent)
    uint64_t jsonBytes = 0;
    uint64_t events = 0;
    KinetoDependencyCounts counts;
    CrossStreamMethod crossStreamMethod = CrossStreamMethod::None;
    uint64_t orphanGpuOps = 0;
};

/// Reads one trace per rank and converts them; ranks come from distributedInfo (or the file
/// order when absent). When `summaries` is given it receives one entry per file, in file
/// order. Throws TraceFormatError.
JobTrace ReadKinetoJob(const std::vector<std::string>& files,
                       const KinetoGraphOptions& options = {},
                       std::vector<KinetoFileSummary>* summaries = nullptr);

/// Maps a PyTorch "Collective name" (or an NCCL kernel name) to a collective kind.
bool ParseKinetoCollective(const std::string& name, CollKind& out);
/// Maps a PyTorch dtype name ("Float", "BFloat16", ...) to a DataType and its size in bytes.
bool ParseKinetoDtype(const std::string& name, DataType& out, uint32_t& size);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_KINETO_TRACE_H
