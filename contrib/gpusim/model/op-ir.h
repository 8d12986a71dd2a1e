/*
 * gpusim Op IR: the per-rank, per-host-thread list of device-API operations that every
 * workload source (shim recorder, Kineto reader, generators) produces and the engine runs.
 * On-disk form ("gpusim trace", version 1): a directory with manifest.json plus one JSON-lines
 * file per rank; see doc/op-ir.md.
 */
#ifndef GPUSIM_OP_IR_H
#define GPUSIM_OP_IR_H

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

constexpr uint32_t kOpIrVersion = 1;

enum class OpKind : uint8_t
{
    HostWork,        //!< CPU time on the host thread only (cpuUs)
    Kernel,          //!< kernel launch on a stream
    Memcpy,          //!< copy on a stream (async) or blocking (sync copy)
    Memset,          //!< memset on a stream
    EventRecord,     //!< cudaEventRecord(event, stream)
    StreamWaitEvent, //!< cudaStreamWaitEvent(stream, event)
    EventSync,       //!< cudaEventSynchronize(event): host blocks
    StreamSync,      //!< cudaStreamSynchronize(stream): host blocks
    DeviceSync,      //!< cudaDeviceSynchronize(): host blocks on all streams of the rank
    StreamCreate,    //!< stream creation (flags: 1 = non-blocking, priority)
    Malloc,          //!< device allocation (bytes, ptr)
    Free,            //!< device free (ptr)
    CommInit,        //!< communicator creation: comm id, nranks, commRank
    Collective,      //!< NCCL collective or P2P (Send/Recv) on a stream
    ThreadSignal,    //!< cross-thread dependency: this thread signals token
    ThreadWait,      //!< cross-thread dependency: host waits for token
    Marker,          //!< annotation (iteration / NVTX range) begin or end
};

enum class CollKind : uint8_t
{
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    Send,
    Recv,
};

enum class DataType : uint8_t
{
    F32,
    F16,
    BF16,
    F64,
    I8,
    U8,
    I32,
    U32,
    I64,
    U64,
    F8E4M3,
    F8E5M2,
    TF32, //!< GEMM math only: FP32 data on TF32 tensor cores (4-byte elements); not an NCCL type
};

enum class MemcpyKind : uint8_t
{
    HostToHost,
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
    Default,
    PeerToPeer,
};

enum class MarkerPhase : uint8_t
{
    Begin,
    End,
    Instant,
};

/// Shape of a dense GEMM (per batch element), used by roofline cost models.
struct GemmShape
{
    uint64_t m = 0; //!< rows of C; 0 means "not a GEMM"
    uint64_t n = 0;
    uint64_t k = 0;
    uint64_t batch = 1;
    DataType dtype = DataType::BF16;
    /// SMs the GEMM leaves to a concurrent kernel: Transformer Engine's set_sm_margin, which
    /// sets cuBLASLt's CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET to the GPU's SMs minus this for a
    /// GEMM overlapped with a communication kernel; 0: the GEMM may use every SM.
    uint32_t smMargin = 0;
};

/// One operation. A flat record: which fields matter depends on kind (see doc/op-ir.md).
/// Op::flags of a Send / Recv / AllToAll: the bytes go in one copy into the peer's buffer
/// (Transformer Engine's userbuffers on the copy engines, NCCL's direct mode between ranks of
/// one process) instead of NCCL's FIFO and the receiver's copy out of it.
constexpr uint32_t kCollOneCopy = 1;

struct Op
{
    OpKind kind = OpKind::HostWork;
    uint32_t thread = 0;  //!< host thread index within the rank
    double cpuUs = 0;     //!< host time spent before this op is issued (gap + call cost)
    int64_t stream = 0;   //!< stream id; 0 = legacy default stream
    std::string name;     //!< kernel name / marker name / free-form label
    double durUs = -1;    //!< recorded device duration (us), -1 if unknown
    uint64_t bytes = 0;   //!< memcpy/memset/malloc bytes; collective payload bytes (see doc)
    // Kernel launch shape and cost-model inputs.
    std::array<uint32_t, 3> grid{1, 1, 1};
    std::array<uint32_t, 3> block{1, 1, 1};
    uint32_t sharedMem = 0;
    double flops = 0;     //!< FLOPs of the kernel, 0 if unknown
    double memBytes = 0;  //!< bytes moved through HBM, 0 if unknown
    GemmShape gemm;
    // Copies.
    MemcpyKind copyKind = MemcpyKind::Default;
    int32_t srcRank = -1; //!< PeerToPeer: rank whose GPU holds the source (-1: unknown)
    int32_t dstRank = -1; //!< PeerToPeer: rank whose GPU receives the bytes (-1: unknown)
    bool async = true;    //!< false: host blocks until the copy is done (cudaMemcpy)
    bool staged = false;  //!< PeerToPeer with no peer mapping either way (no
                          //!< cudaDeviceEnablePeerAccess): staged through host memory
    bool query = false;   //!< StreamSync/EventSync recorded from a completed cudaStreamQuery /
                          //!< cudaEventQuery (a poll) rather than a synchronize call
    double wakeUs = 0;    //!< blocking calls: host time from the awaited work's end to the
                          //!< call's return when it had to wait (the runtime's wake-up)
    // Events / streams / memory.
    uint64_t event = 0;
    /// StreamCreate: 1 = non-blocking. Collective (Send / Recv): kCollOneCopy.
    uint32_t flags = 0;
    int32_t priority = 0;
    uint64_t ptr = 0;
    // Collectives.
    CollKind coll = CollKind::AllReduce;
    std::string comm;     //!< communicator id (hex of the unique id, or a name); set on a
                          //!< Kernel: NCCL work replayed as a kernel (counts as communication)
    uint64_t seq = 0;     //!< per-communicator sequence number on this rank
    DataType dtype = DataType::F32;
    uint64_t count = 0;   //!< element count as passed to NCCL
    int32_t root = -1;    //!< root (Broadcast/Reduce) in communicator ranks
    int32_t peer = -1;    //!< peer (Send/Recv) in communicator ranks
    uint64_t group = 0;   //!< nonzero: ops of one ncclGroupStart/End share this id
    int32_t nranks = 0;   //!< CommInit: communicator size
    int32_t commRank = 0; //!< CommInit: this rank's index in the communicator
    // Cross-thread dependencies.
    uint64_t token = 0;
    // Markers.
    MarkerPhase phase = MarkerPhase::Instant;
    double recordedUs = -1; //!< recorded timestamp (us from trace start), -1 if unknown
};

/// All operations of one rank (one GPU), in issue order; Op::thread names the host thread.
struct RankTrace
{
    uint32_t rank = 0;
    std::string device;   //!< GPU model the trace was recorded on (informational)
    std::vector<Op> ops;
    /// In-memory sharing between identical ranks (ShareIdenticalRanks, engine input only; never
    /// on disk): >= 0 means this rank runs rank `opsFrom`'s ops, and `ops` holds only this
    /// rank's own comm_init lines (the one field identical ranks differ in), in the order of
    /// the shared list's. The i-th may name another communicator than the list's i-th (ranks
    /// of different TP / DP groups running the same program, as the training generator shares
    /// them): the list's collectives on that communicator then run on the rank's own, and its
    /// sends and receives go to the peers at the same offsets from this rank's comm rank as
    /// from the owner's (TP ranks of a ring, each sending to the next, share one list).
    int32_t opsFrom = -1;
};

/// A whole job: every rank plus free-form metadata from the manifest.
struct JobTrace
{
    uint32_t version = kOpIrVersion;
    std::string source;   //!< "shim", "kineto", "generator", ...
    std::vector<RankTrace> ranks;
    std::map<std::string, std::string> metadata;
};

/// Error in a trace file: names the file, the line (1-based, 0 if none) and what was wrong.
class TraceFormatError : public std::runtime_error
{
  public:
    TraceFormatError(const std::string& file, uint64_t line, const std::string& reason);
    const std::string& File() const { return m_file; }
    uint64_t Line() const { return m_line; }
    const std::string& Reason() const { return m_reason; }

  private:
    std::string m_file;
    uint64_t m_line;
    std::string m_reason;
};

// Names used on disk and in outputs (lower case).
const char* ToString(OpKind k);
const char* ToString(CollKind k);
const char* ToString(DataType t);
const char* ToString(MemcpyKind k);
bool ParseOpKind(const std::string& s, OpKind& out);
bool ParseCollKind(const std::string& s, CollKind& out);
bool ParseDataType(const std::string& s, DataType& out);
bool ParseMemcpyKind(const std::string& s, MemcpyKind& out);
/// Size of one element in bytes (fp8 = 1).
uint32_t DataTypeSize(DataType t);

/// Reads a gpusim trace directory (manifest.json + per-rank JSON-lines). Throws TraceFormatError.
JobTrace ReadJobTrace(const std::string& dir);
/// The same, calling `onRank(job, r)` right after rank r is read (ranks in order), e.g. to let
/// identical ranks share one op list while reading (ReadJobTraceSharing).
JobTrace ReadJobTrace(const std::string& dir,
                      const std::function<void(JobTrace&, uint32_t)>& onRank);
/// Reads one rank file (JSON-lines). Throws TraceFormatError.
RankTrace ReadRankTrace(const std::string& file, uint32_t rank);
/// Parses one op line (a JSON object, as in a rank file); `where` and `lineNo` name it in
/// errors. Throws TraceFormatError.
Op ParseOpLine(const std::string& line, const std::string& where, uint64_t lineNo);
Op ParseOpLine(const char* line, size_t size, const std::string& where, uint64_t lineNo);
/// Serialises one op as a single JSON line (no trailing newline).
std::string OpToJsonLine(const Op& op);
/// Writes a trace directory atomically (temp files renamed into place). Throws std::runtime_error.
void WriteJobTrace(const JobTrace& job, const std::string& dir);
/// The same for jobs too large to hold unshared: `job` gives source and metadata (its ranks
/// are ignored), `rankAt(r)` produces rank r (0 <= r < nranks), one at a time.
void WriteJobTrace(const JobTrace& job,
                   const std::string& dir,
                   const std::function<RankTrace(uint32_t)>& rankAt,
                   uint32_t nranks);

/// Rank r written out in full: itself, or (RankTrace::opsFrom >= 0) the shared list with r's
/// own comm_init lines in place of the list's and its collectives on r's communicators.
RankTrace UnsharedRank(const JobTrace& job, uint32_t r);

/// Checks cross-op consistency of a job (streams, events, communicators, collective matching
/// by (comm, seq)) and throws TraceFormatError naming the rank/op on the first problem.
/// Ranks sharing another rank's op list (RankTrace::opsFrom) are checked as that list with
/// their own comm_init lines in place of the shared ones.
void ValidateJobTrace(const JobTrace& job);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_OP_IR_H
