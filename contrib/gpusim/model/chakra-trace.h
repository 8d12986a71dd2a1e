/*
 * Chakra execution traces (MLCommons Chakra ET, the workload format of ASTRA-sim) <-> the
 * gpusim Op IR. One ET file per rank (NAME.RANK.et): a length-delimited GlobalMetadata
 * message, then length-delimited Node messages (schema: model/proto/chakra-et.proto).
 *
 * Reading turns each rank's dependency DAG into streams, events and host threads that start
 * every node when all its dependencies are done; writing turns an Op IR job (streams, events,
 * syncs, host time) into the DAG of those same orderings. doc/chakra.md has the mapping.
 *
 * ChakraNode / ChakraRankFile are plain structs (no protobuf types), so callers and tests need
 * no generated code; protobuf stays inside chakra-trace.cc.
 */
#ifndef GPUSIM_CHAKRA_TRACE_H
#define GPUSIM_CHAKRA_TRACE_H

#include "ns3/op-ir.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// Chakra NodeType (values are the schema's).
enum class ChakraNodeType : int32_t
{
    Invalid = 0,
    Metadata = 1,
    MemLoad = 2,
    MemStore = 3,
    Comp = 4,
    CommSend = 5,
    CommRecv = 6,
    CommColl = 7,
};

/// Chakra CollectiveCommType (values are the schema's).
enum class ChakraCollType : int32_t
{
    AllReduce = 0,
    Reduce = 1,
    AllGather = 2,
    Gather = 3,
    Scatter = 4,
    Broadcast = 5,
    AllToAll = 6,
    ReduceScatter = 7,
    ReduceScatterBlock = 8,
    Barrier = 9,
};

const char* ToString(ChakraNodeType t);
const char* ToString(ChakraCollType t);

/// One Chakra node with the attributes gpusim reads (others are kept by name only).
struct ChakraNode
{
    uint64_t id = 0;
    std::string name;
    ChakraNodeType type = ChakraNodeType::Invalid;
    uint64_t offset = 0;     //!< byte offset of its length prefix in the (unzipped) file
    std::vector<uint64_t> dataDeps;
    std::vector<uint64_t> ctrlDeps;
    uint64_t startUs = 0;    //!< start_time_micros (informational)
    uint64_t durationUs = 0; //!< duration_micros; 0 = not given
    bool isCpuOp = false;    //!< attr is_cpu_op
    double numOps = 0;       //!< attr num_ops (FLOPs)
    uint64_t tensorSize = 0; //!< attr tensor_size (bytes)
    int32_t commType = -1;   //!< attr comm_type (ChakraCollType), -1 = absent
    uint64_t commSize = 0;   //!< attr comm_size (bytes, per-rank input buffer)
    int32_t commSrc = -1;    //!< attr comm_src (global rank), -1 = absent
    int32_t commDst = -1;    //!< attr comm_dst (global rank), -1 = absent
    int32_t commTag = 0;     //!< attr comm_tag
    std::string pgName;      //!< attr pg_name (process group), "" = all ranks
    // gpusim's own attributes (written by gpusim, optional on read).
    double exactDurUs = -1;  //!< attr gpusim_dur_us: duration with sub-microsecond precision
    int32_t root = -1;       //!< attr gpusim_root: Broadcast/Reduce root (comm rank)
    std::string dtype;       //!< attr gpusim_dtype: collective element type (op-ir name)
    std::vector<std::string> otherAttrs; //!< names of attributes gpusim does not use
    std::vector<std::string> attrNames;  //!< names of all its attributes, in file order
    /// inputs.values of a METADATA_NODE (PyTorch's process-group table lives there); other
    /// nodes' inputs and outputs are not kept.
    std::string inputsValues;
};

/// One rank's ET file.
struct ChakraRankFile
{
    std::string file;    //!< where it was read from (for errors)
    std::string version; //!< GlobalMetadata.version
    std::map<std::string, std::string> metadata; //!< GlobalMetadata string attributes
    std::vector<ChakraNode> nodes;
};

/// A job: one file per rank plus process-group membership (pg_name -> global ranks, in
/// communicator-rank order), from a comm-group file, from PyTorch's process-group METADATA
/// node, or (left empty here) inferred from pg_name use (doc/chakra.md).
struct ChakraJob
{
    std::vector<ChakraRankFile> ranks;
    std::map<std::string, std::vector<uint32_t>> commGroups;
};

/// How Chakra send/recv nodes complete (doc/chakra.md).
enum class ChakraP2p : uint8_t
{
    Auto,       //!< rendezvous for files gpusim wrote (metadata p2p=rendezvous), else eager
    Eager,      //!< ASTRA-sim: a send does not wait for the receive to be posted
    Rendezvous, //!< NCCL: the transfer starts when both sides have posted
};

struct ChakraImportOptions
{
    std::string commGroupsFile; //!< ASTRA-sim comm-group JSON; "" = PREFIX.comm_groups.json if
                                //!< present, else inferred from pg_name use
    ChakraP2p p2p = ChakraP2p::Auto;
};

/// Rank files of a Chakra trace, rank order: DIR (holding one family NAME.0.et ...), a
/// PREFIX (PREFIX.0.et ...), or one file NAME.R.et. Throws TraceFormatError if none, if ranks
/// are missing, or if DIR holds several families.
std::vector<std::string> FindChakraFiles(const std::string& dirOrPrefix);
/// True if the path names a Chakra trace (FindChakraFiles would succeed) and is not a gpusim
/// trace directory.
bool IsChakraInput(const std::string& path);

/// Reads one ET file (plain or gzip). Throws TraceFormatError naming the file, the node's
/// index and byte offset, and what was wrong.
ChakraRankFile ReadChakraFile(const std::string& file);
/// Writes one ET file. Throws std::runtime_error.
void WriteChakraFile(const ChakraRankFile& rank, const std::string& file);

/// Reads every rank file of a trace and its process groups.
ChakraJob ReadChakraJob(const std::string& dirOrPrefix, const std::string& commGroupsFile = "");
/// Writes PREFIX.R.et for every rank and PREFIX.comm_groups.json (ASTRA-sim's
/// --comm-group-configuration format) when the job has process groups.
void WriteChakraJob(const ChakraJob& job, const std::string& prefix);

/// DAGs -> Op IR (source "chakra"). Throws TraceFormatError for dependency cycles, unknown
/// dependencies, unsupported node or collective types and inconsistent send/recv ranks.
JobTrace ChakraToJobTrace(const ChakraJob& job, ChakraP2p p2p = ChakraP2p::Auto);
/// Op IR -> DAGs. Throws std::invalid_argument for a job it cannot express.
ChakraJob JobTraceToChakra(const JobTrace& job);

/// ReadChakraJob + ChakraToJobTrace.
JobTrace ImportChakra(const std::string& dirOrPrefix, const ChakraImportOptions& opt = {});

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_CHAKRA_TRACE_H
