#include "ns3/job-builder.h"

#include <stdexcept>

namespace ns3
{

using gpusim::CollKind;
using gpusim::Op;
using gpusim::OpKind;

JobBuilder::JobBuilder(uint32_t ranks, const std::string& source)
{
    if (ranks == 0)
    {
        throw std::invalid_argument("a job needs at least one rank");
    }
    m_job.source = source;
    for (uint32_t r = 0; r < ranks; ++r)
    {
        gpusim::RankTrace rt;
        rt.rank = r;
        m_job.ranks.push_back(rt);
    }
}

JobBuilder&
JobBuilder::Rank(uint32_t r)
{
    if (r >= m_job.ranks.size())
    {
        throw std::out_of_range("rank " + std::to_string(r) + " out of range");
    }
    m_rank = r;
    return *this;
}

JobBuilder&
JobBuilder::AllRanks()
{
    m_rank = -1;
    return *this;
}

JobBuilder&
JobBuilder::Thread(uint32_t t)
{
    m_thread = t;
    return *this;
}

JobBuilder&
JobBuilder::Host(double us)
{
    m_pendingCpuUs += us;
    return *this;
}

std::vector<uint32_t>
JobBuilder::Selected() const
{
    std::vector<uint32_t> v;
    if (m_rank >= 0)
    {
        v.push_back(static_cast<uint32_t>(m_rank));
    }
    else
    {
        for (uint32_t r = 0; r < m_job.ranks.size(); ++r)
        {
            v.push_back(r);
        }
    }
    return v;
}

JobBuilder&
JobBuilder::Add(Op op)
{
    op.thread = m_thread;
    op.cpuUs += m_pendingCpuUs;
    m_pendingCpuUs = 0;
    for (uint32_t r : Selected())
    {
        Op o = op;
        if (o.kind == OpKind::Collective && o.coll != CollKind::Send && o.coll != CollKind::Recv)
        {
            o.seq = m_seq[{r, o.comm}]++;
        }
        m_job.ranks[r].ops.push_back(o);
    }
    return *this;
}

JobBuilder&
JobBuilder::CreateStream(int64_t stream, bool nonBlocking, int32_t priority)
{
    Op op;
    op.kind = OpKind::StreamCreate;
    op.stream = stream;
    op.flags = nonBlocking ? 1 : 0;
    op.priority = priority;
    return Add(op);
}

JobBuilder&
JobBuilder::Kernel(int64_t stream, const std::string& name, double durUs)
{
    Op op;
    op.kind = OpKind::Kernel;
    op.stream = stream;
    op.name = name;
    op.durUs = durUs;
    return Add(op);
}

JobBuilder&
JobBuilder::Gemm(int64_t stream, uint64_t m, uint64_t n, uint64_t k, gpusim::DataType dtype,
                 const std::string& name)
{
    Op op;
    op.kind = OpKind::Kernel;
    op.stream = stream;
    op.name = name;
    op.gemm = {m, n, k, 1, dtype};
    op.flops = 2.0 * m * n * k;
    return Add(op);
}

JobBuilder&
JobBuilder::Memcpy(int64_t stream, gpusim::MemcpyKind kind, uint64_t bytes, bool async)
{
    Op op;
    op.kind = OpKind::Memcpy;
    op.stream = stream;
    op.copyKind = kind;
    op.bytes = bytes;
    op.async = async;
    return Add(op);
}

JobBuilder&
JobBuilder::PeerCopy(int64_t stream, uint32_t srcRank, uint32_t dstRank, uint64_t bytes, bool async)
{
    Op op;
    op.kind = OpKind::Memcpy;
    op.stream = stream;
    op.copyKind = gpusim::MemcpyKind::PeerToPeer;
    op.srcRank = static_cast<int32_t>(srcRank);
    op.dstRank = static_cast<int32_t>(dstRank);
    op.bytes = bytes;
    op.async = async;
    return Add(op);
}

JobBuilder&
JobBuilder::Memset(int64_t stream, uint64_t bytes)
{
    Op op;
    op.kind = OpKind::Memset;
    op.stream = stream;
    op.bytes = bytes;
    return Add(op);
}

JobBuilder&
JobBuilder::RecordEvent(uint64_t event, int64_t stream)
{
    Op op;
    op.kind = OpKind::EventRecord;
    op.event = event;
    op.stream = stream;
    return Add(op);
}

JobBuilder&
JobBuilder::WaitEvent(int64_t stream, uint64_t event)
{
    Op op;
    op.kind = OpKind::StreamWaitEvent;
    op.event = event;
    op.stream = stream;
    return Add(op);
}

JobBuilder&
JobBuilder::SyncEvent(uint64_t event)
{
    Op op;
    op.kind = OpKind::EventSync;
    op.event = event;
    return Add(op);
}

JobBuilder&
JobBuilder::SyncStream(int64_t stream)
{
    Op op;
    op.kind = OpKind::StreamSync;
    op.stream = stream;
    return Add(op);
}

JobBuilder&
JobBuilder::SyncDevice()
{
    Op op;
    op.kind = OpKind::DeviceSync;
    return Add(op);
}

JobBuilder&
JobBuilder::Malloc(uint64_t ptr, uint64_t bytes)
{
    Op op;
    op.kind = OpKind::Malloc;
    op.ptr = ptr;
    op.bytes = bytes;
    return Add(op);
}

JobBuilder&
JobBuilder::Free(uint64_t ptr)
{
    Op op;
    op.kind = OpKind::Free;
    op.ptr = ptr;
    return Add(op);
}

JobBuilder&
JobBuilder::Signal(uint64_t token)
{
    Op op;
    op.kind = OpKind::ThreadSignal;
    op.token = token;
    return Add(op);
}

JobBuilder&
JobBuilder::Wait(uint64_t token)
{
    Op op;
    op.kind = OpKind::ThreadWait;
    op.token = token;
    return Add(op);
}

JobBuilder&
JobBuilder::Marker(const std::string& name, gpusim::MarkerPhase phase)
{
    Op op;
    op.kind = OpKind::Marker;
    op.name = name;
    op.phase = phase;
    return Add(op);
}

JobBuilder&
JobBuilder::CommInit(const std::string& comm, int32_t nranks, int32_t commRank)
{
    if (m_rank < 0)
    {
        const int32_t n = static_cast<int32_t>(m_job.ranks.size());
        for (int32_t r = 0; r < n; ++r)
        {
            Op op;
            op.kind = OpKind::CommInit;
            op.comm = comm;
            op.nranks = n;
            op.commRank = r;
            op.thread = m_thread;
            m_job.ranks[r].ops.push_back(op);
        }
        return *this;
    }
    if (nranks <= 0 || commRank < 0 || commRank >= nranks)
    {
        throw std::invalid_argument("CommInit on one rank needs 0 <= commRank < nranks");
    }
    Op op;
    op.kind = OpKind::CommInit;
    op.comm = comm;
    op.nranks = nranks;
    op.commRank = commRank;
    return Add(op);
}

JobBuilder&
JobBuilder::Collective(int64_t stream, CollKind kind, const std::string& comm, uint64_t bytes,
                       gpusim::DataType dtype, int32_t root)
{
    Op op;
    op.kind = OpKind::Collective;
    op.coll = kind;
    op.stream = stream;
    op.comm = comm;
    op.bytes = bytes;
    op.dtype = dtype;
    op.count = bytes / gpusim::DataTypeSize(dtype);
    op.root = root;
    if ((kind == CollKind::Broadcast || kind == CollKind::Reduce) && root < 0)
    {
        op.root = 0;
    }
    return Add(op);
}

JobBuilder&
JobBuilder::AllReduce(int64_t stream, const std::string& comm, uint64_t bytes)
{
    return Collective(stream, CollKind::AllReduce, comm, bytes);
}

JobBuilder&
JobBuilder::Send(int64_t stream, const std::string& comm, int32_t peer, uint64_t bytes,
                 uint64_t group)
{
    Op op;
    op.kind = OpKind::Collective;
    op.coll = CollKind::Send;
    op.stream = stream;
    op.comm = comm;
    op.peer = peer;
    op.bytes = bytes;
    op.count = bytes / 4;
    op.group = group;
    return Add(op);
}

JobBuilder&
JobBuilder::Recv(int64_t stream, const std::string& comm, int32_t peer, uint64_t bytes,
                 uint64_t group)
{
    Op op;
    op.kind = OpKind::Collective;
    op.coll = CollKind::Recv;
    op.stream = stream;
    op.comm = comm;
    op.peer = peer;
    op.bytes = bytes;
    op.count = bytes / 4;
    op.group = group;
    return Add(op);
}

gpusim::JobTrace
JobBuilder::Build() const
{
    return m_job;
}

std::shared_ptr<const gpusim::JobTrace>
JobBuilder::BuildShared() const
{
    return std::make_shared<const gpusim::JobTrace>(m_job);
}

} // namespace ns3
