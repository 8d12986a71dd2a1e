#include "ns3/op-stream-dedup.h"

#include "ns3/log.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("OpStreamDedup");

namespace gpusim
{

namespace
{

/// 64-bit FNV-1a, fed field by field.
class Fnv1a
{
  public:
    void Bytes(const void* data, size_t n)
    {
        const auto* p = static_cast<const unsigned char*>(data);
        for (size_t i = 0; i < n; ++i)
        {
            m_h ^= p[i];
            m_h *= 1099511628211ull;
        }
    }

    template <typename T>
    void Value(T v)
    {
        Bytes(&v, sizeof(v));
    }

    void Double(double d)
    {
        if (d == 0)
        {
            d = 0; // -0.0 and 0.0 are the same time
        }
        Value(d);
    }

    void String(const std::string& s)
    {
        Value<uint64_t>(s.size());
        Bytes(s.data(), s.size());
    }

    uint64_t Get() const
    {
        return m_h;
    }

  private:
    uint64_t m_h = 14695981039346656037ull;
};

/// Stable small ids for values that are names local to one rank (communicators, pointers,
/// group ids): the i-th distinct value seen becomes i.
template <typename K>
class Ordinals
{
  public:
    uint64_t Of(const K& k)
    {
        auto it = m_ids.emplace(k, m_ids.size()).first;
        return it->second;
    }

  private:
    std::map<K, uint64_t> m_ids;
};

std::vector<std::vector<uint32_t>>
Group(const std::vector<uint64_t>& hashes)
{
    std::map<uint64_t, size_t> index;
    std::vector<std::vector<uint32_t>> groups;
    for (uint32_t r = 0; r < hashes.size(); ++r)
    {
        auto [it, fresh] = index.emplace(hashes[r], groups.size());
        if (fresh)
        {
            groups.emplace_back();
        }
        groups[it->second].push_back(r);
    }
    return groups;
}

} // namespace

namespace
{

uint64_t
HashOps(const std::vector<Op>& ops, const std::vector<Op>* ownInits, bool withTimings)
{
    Fnv1a h;
    Ordinals<std::string> comms;
    Ordinals<uint64_t> ptrs;
    Ordinals<uint64_t> groups;
    Ordinals<uint64_t> events;
    Ordinals<int64_t> streams;
    Ordinals<uint64_t> tokens;
    std::map<std::string, std::pair<int32_t, int32_t>> myCommRank; // comm -> (rank, nranks)
    size_t nextInit = 0;
    for (const Op& shared : ops)
    {
        // A shared list stands for this rank with its own comm_init lines.
        const Op& op = ownInits && shared.kind == OpKind::CommInit && nextInit < ownInits->size()
                           ? (*ownInits)[nextInit++]
                           : shared;
        h.Value(op.kind);
        h.Value(op.thread);
        // Stream 0 is the legacy default stream; other ids are names local to the device.
        h.Value(op.stream == 0 ? uint64_t(0) : streams.Of(op.stream) + 1);
        if (withTimings)
        {
            h.Double(op.cpuUs);
            h.Double(op.durUs);
        }
        switch (op.kind)
        {
        case OpKind::HostWork:
            h.String(op.name);
            break;
        case OpKind::Kernel:
            h.String(op.name);
            h.Bytes(op.grid.data(), sizeof(op.grid));
            h.Bytes(op.block.data(), sizeof(op.block));
            h.Value(op.sharedMem);
            h.Double(op.flops);
            h.Double(op.memBytes);
            h.Value(op.gemm.m);
            h.Value(op.gemm.n);
            h.Value(op.gemm.k);
            h.Value(op.gemm.batch);
            h.Value(op.gemm.smMargin);
            h.Value(op.gemm.dtype);
            break;
        case OpKind::Memcpy:
            h.Value(op.copyKind);
            h.Value(op.async);
            h.Value(op.staged);
            h.Value(op.bytes);
            h.Value(op.srcRank); // absolute, like `root`: the GPUs the bytes cross between
            h.Value(op.dstRank);
            break;
        case OpKind::Memset:
            h.Value(op.bytes);
            break;
        case OpKind::EventRecord:
        case OpKind::StreamWaitEvent:
            h.Value(events.Of(op.event));
            break;
        case OpKind::EventSync:
            h.Value(events.Of(op.event));
            h.Value(op.query);
            break;
        case OpKind::StreamSync:
            h.Value(op.query);
            break;
        case OpKind::DeviceSync:
            break;
        case OpKind::StreamCreate:
            h.Value(op.flags);
            h.Value(op.priority);
            break;
        case OpKind::Malloc:
            h.Value(op.bytes);
            h.Value(ptrs.Of(op.ptr));
            break;
        case OpKind::Free:
            h.Value(ptrs.Of(op.ptr));
            break;
        case OpKind::CommInit:
            // The comm rank is exactly what differs between otherwise identical ranks.
            h.Value(comms.Of(op.comm));
            h.Value(op.nranks);
            myCommRank[op.comm] = {op.commRank, op.nranks};
            break;
        case OpKind::Collective: {
            h.Value(op.coll);
            h.Value(comms.Of(op.comm));
            h.Value(op.seq);
            h.Value(op.count);
            h.Value(op.dtype);
            h.Value(op.bytes);
            h.Value(op.root);
            int64_t peer = op.peer;
            auto it = myCommRank.find(op.comm);
            if (peer >= 0 && it != myCommRank.end() && it->second.second > 0)
            {
                const int64_t n = it->second.second;
                peer = ((peer - it->second.first) % n + n) % n;
            }
            h.Value(peer);
            h.Value(op.group ? groups.Of(op.group) + 1 : 0);
            h.Value(op.flags);
            break;
        }
        case OpKind::ThreadSignal:
        case OpKind::ThreadWait:
            h.Value(tokens.Of(op.token));
            break;
        case OpKind::Marker:
            h.String(op.name);
            h.Value(op.phase);
            break;
        }
    }
    return h.Get();
}

} // namespace

uint64_t
HashOpStream(const RankTrace& rank, bool withTimings)
{
    return HashOps(rank.ops, nullptr, withTimings);
}

uint64_t
HashOpStream(const JobTrace& job, uint32_t r, bool withTimings)
{
    const RankTrace& rank = job.ranks.at(r);
    if (rank.opsFrom < 0)
    {
        return HashOps(rank.ops, nullptr, withTimings);
    }
    return HashOps(job.ranks.at(rank.opsFrom).ops, &rank.ops, withTimings);
}

std::string
DedupReport::Summary() const
{
    std::string s = std::to_string(ranks) + " rank" + (ranks == 1 ? "" : "s") + ", " +
                    std::to_string(groups.size()) + " distinct op stream" +
                    (groups.size() == 1 ? "" : "s");
    if (structuralGroups.size() != groups.size())
    {
        s += " (" + std::to_string(structuralGroups.size()) + " ignoring host timings)";
    }
    return s;
}

DedupReport
GroupIdenticalRanks(const JobTrace& job)
{
    DedupReport rep;
    rep.ranks = static_cast<uint32_t>(job.ranks.size());
    std::vector<uint64_t> exact;
    std::vector<uint64_t> structural;
    auto opsOf = [&](uint32_t r) -> const std::vector<Op>& {
        const RankTrace& rank = job.ranks[r];
        return rank.opsFrom >= 0 ? job.ranks[rank.opsFrom].ops : rank.ops;
    };
    for (uint32_t r = 0; r < job.ranks.size(); ++r)
    {
        exact.push_back(HashOpStream(job, r, true));
        structural.push_back(HashOpStream(job, r, false));
        rep.opsTotal += opsOf(r).size();
    }
    rep.groups = Group(exact);
    rep.structuralGroups = Group(structural);
    for (const auto& g : rep.groups)
    {
        rep.opsDistinct += opsOf(g.front()).size();
    }
    NS_LOG_INFO(rep.Summary());
    return rep;
}

bool
SamePeersWhenShared(const std::vector<Op>& list, const std::vector<Op>& ops)
{
    // A sharer runs the list's sends and receives at the list's offsets from its own comm rank
    // (RankTrace::opsFrom). Where the two comm ranks differ, equal written peers would then be
    // other ranks: such lists are equal, not shareable.
    std::set<std::string> shifted;
    for (size_t i = 0; i < list.size(); ++i)
    {
        if (list[i].kind == OpKind::CommInit && list[i].commRank != ops[i].commRank)
        {
            shifted.insert(list[i].comm);
        }
    }
    for (const Op& op : list)
    {
        if (op.kind == OpKind::Collective &&
            (op.coll == CollKind::Send || op.coll == CollKind::Recv) && shifted.count(op.comm))
        {
            return false;
        }
    }
    return true;
}

bool
SameOpForSharing(const Op& a, const Op& b)
{
    auto fields = [](const Op& o) {
        return std::tie(o.kind, o.thread, o.cpuUs, o.stream, o.name, o.durUs, o.bytes, o.grid,
                        o.block, o.sharedMem, o.flops, o.memBytes, o.gemm.m, o.gemm.n, o.gemm.k,
                        o.gemm.batch, o.gemm.dtype, o.gemm.smMargin, o.copyKind, o.srcRank, o.dstRank, o.async,
                        o.staged,
                        o.query, o.event, o.flags, o.priority, o.ptr, o.coll, o.comm, o.seq,
                        o.dtype, o.count, o.root, o.peer, o.group, o.nranks, o.token, o.phase,
                        o.recordedUs);
    };
    if (fields(a) != fields(b))
    {
        return false;
    }
    return a.kind == OpKind::CommInit || a.commRank == b.commRank;
}

bool
RankSharer::Offer(JobTrace& job, uint32_t r)
{
    RankTrace& rank = job.ranks.at(r);
    if (rank.opsFrom >= 0)
    {
        return true;
    }
    // Bucket by a literal hash (no renaming: sharing needs equal ops, not equivalent ones),
    // then confirm field by field.
    Fnv1a h;
    for (const Op& op : rank.ops)
    {
        h.Value(op.kind);
        h.Value(op.thread);
        h.Double(op.cpuUs);
        h.Value(op.stream);
        h.String(op.name);
        h.String(op.comm);
        h.Value(op.seq);
        h.Value(op.peer);
        h.Value(op.event);
        h.Value(op.bytes);
    }
    auto& candidates = m_candidates[h.Get()];
    for (uint32_t c : candidates)
    {
        const auto& other = job.ranks[c].ops;
        if (other.size() == rank.ops.size() &&
            std::equal(other.begin(), other.end(), rank.ops.begin(), SameOpForSharing) &&
            SamePeersWhenShared(other, rank.ops))
        {
            std::vector<Op> own;
            for (const Op& op : rank.ops)
            {
                if (op.kind == OpKind::CommInit)
                {
                    own.push_back(op);
                }
            }
            rank.ops.swap(own); // frees the duplicate list
            rank.opsFrom = static_cast<int32_t>(c);
            return true;
        }
    }
    candidates.push_back(r);
    return false;
}

uint32_t
ShareIdenticalRanks(JobTrace& job)
{
    RankSharer sharer;
    uint32_t shared = 0;
    for (uint32_t r = 0; r < job.ranks.size(); ++r)
    {
        shared += sharer.Offer(job, r) ? 1 : 0;
    }
    NS_LOG_INFO(shared << " of " << job.ranks.size() << " ranks share another rank's ops");
    return shared;
}

JobTrace
ReadJobTraceSharing(const std::string& dir, uint32_t* shared)
{
    RankSharer sharer;
    uint32_t n = 0;
    JobTrace job = ReadJobTrace(dir, [&](JobTrace& j, uint32_t r) {
        n += sharer.Offer(j, r) ? 1 : 0;
    });
    if (shared)
    {
        *shared = n;
    }
    return job;
}

} // namespace gpusim
} // namespace ns3
