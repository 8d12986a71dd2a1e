/*
 * JobBuilder: write Op IR workloads in code (scenario scripts, generators, tests).
 *
 *   JobBuilder b(8);
 *   b.AllRanks().CommInit("dp").Kernel(1, "gemm", 120.0).AllReduce(2, "dp", 64 << 20);
 *   auto job = b.Build();
 */
#ifndef GPUSIM_JOB_BUILDER_H
#define GPUSIM_JOB_BUILDER_H

#include "ns3/op-ir.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

class JobBuilder
{
  public:
    explicit JobBuilder(uint32_t ranks, const std::string& source = "generator");

    /// Following calls apply to one rank / to every rank.
    JobBuilder& Rank(uint32_t r);
    JobBuilder& AllRanks();
    /// Host thread for following calls (default 0).
    JobBuilder& Thread(uint32_t t);
    /// Host time charged before the next op.
    JobBuilder& Host(double us);

    JobBuilder& CreateStream(int64_t stream, bool nonBlocking = false, int32_t priority = 0);
    JobBuilder& Kernel(int64_t stream, const std::string& name, double durUs);
    JobBuilder& Gemm(int64_t stream, uint64_t m, uint64_t n, uint64_t k,
                     gpusim::DataType dtype = gpusim::DataType::BF16,
                     const std::string& name = "gemm");
    JobBuilder& Memcpy(int64_t stream, gpusim::MemcpyKind kind, uint64_t bytes, bool async = true);
    /// A p2p copy of `bytes` from rank srcRank's GPU to rank dstRank's (cudaMemcpyPeerAsync).
    JobBuilder& PeerCopy(int64_t stream, uint32_t srcRank, uint32_t dstRank, uint64_t bytes,
                         bool async = true);
    JobBuilder& Memset(int64_t stream, uint64_t bytes);
    JobBuilder& RecordEvent(uint64_t event, int64_t stream);
    JobBuilder& WaitEvent(int64_t stream, uint64_t event);
    JobBuilder& SyncEvent(uint64_t event);
    JobBuilder& SyncStream(int64_t stream);
    JobBuilder& SyncDevice();
    JobBuilder& Malloc(uint64_t ptr, uint64_t bytes);
    JobBuilder& Free(uint64_t ptr);
    JobBuilder& Signal(uint64_t token);
    JobBuilder& Wait(uint64_t token);
    JobBuilder& Marker(const std::string& name, gpusim::MarkerPhase phase);

    /// Each selected rank joins `comm`. With AllRanks(): all ranks, comm rank = rank index.
    /// With Rank(r): r joins as `commRank` of `nranks`.
    JobBuilder& CommInit(const std::string& comm, int32_t nranks = -1, int32_t commRank = -1);
    /// A collective on `stream`; sequence numbers are assigned per (rank, comm).
    JobBuilder& Collective(int64_t stream, gpusim::CollKind kind, const std::string& comm,
                           uint64_t bytes, gpusim::DataType dtype = gpusim::DataType::F32,
                           int32_t root = -1);
    JobBuilder& AllReduce(int64_t stream, const std::string& comm, uint64_t bytes);
    JobBuilder& Send(int64_t stream, const std::string& comm, int32_t peer, uint64_t bytes,
                     uint64_t group = 0);
    JobBuilder& Recv(int64_t stream, const std::string& comm, int32_t peer, uint64_t bytes,
                     uint64_t group = 0);

    /// The job so far (the builder can keep going).
    gpusim::JobTrace Build() const;
    std::shared_ptr<const gpusim::JobTrace> BuildShared() const;

  private:
    JobBuilder& Add(gpusim::Op op);
    std::vector<uint32_t> Selected() const;

    gpusim::JobTrace m_job;
    int64_t m_rank = -1; //!< -1 = all ranks
    uint32_t m_thread = 0;
    double m_pendingCpuUs = 0;
    std::map<std::pair<uint32_t, std::string>, uint64_t> m_seq;
};

} // namespace ns3

#endif // GPUSIM_JOB_BUILDER_H
