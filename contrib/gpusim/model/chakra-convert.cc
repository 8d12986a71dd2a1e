/*
 * Chakra DAG <-> Op IR (doc/chakra.md).
 *
 * Import: every non-empty node becomes one op. Device nodes go on streams (a chain of nodes
 * where each depends directly on the previous one shares a stream); a dependency on another
 * stream is an event recorded after the producer and waited on by the consumer's stream.
 * Host (is_cpu_op) nodes run as host work on host threads >= 1, and so are issued every device
 * node that has a host node among its ancestors; dependencies across threads are thread
 * signal/wait tokens, device -> host dependencies are event syncs. Thread 0 issues the purely
 * device part of the graph at time 0 and never blocks, so a node starts exactly when its last
 * dependency completes.
 *
 * Export: the orderings an Op IR job expresses (stream order, event waits, syncs, thread
 * tokens, host time) become the node dependencies.
 */
#include "ns3/chakra-trace.h"

#include "ns3/log.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <set>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ChakraConvert");

namespace gpusim
{

namespace
{

const char* const kWorld = "world";

bool
IsEmptyNode(const ChakraNode& n)
{
    return n.type == ChakraNodeType::Metadata || n.type == ChakraNodeType::Invalid;
}

std::string
NodeWhere(const ChakraNode& n, size_t index)
{
    return "node " + std::to_string(index) + " at byte offset " + std::to_string(n.offset) +
           " (id " + std::to_string(n.id) + ", '" + n.name + "')";
}

/// Communicators of the job: id -> members (global ranks in communicator-rank order).
struct CommPlan
{
    std::map<std::string, std::vector<uint32_t>> members;
    ChakraP2p p2p = ChakraP2p::Eager;

    std::string CollComm(const std::string& pg) const
    {
        return pg.empty() || pg == "0" ? kWorld : "pg:" + pg;
    }
    static std::string P2pComm(int32_t tag) { return "p2p:" + std::to_string(tag); }
};

CommPlan
PlanComms(const ChakraJob& job, ChakraP2p p2p)
{
    CommPlan plan;
    const uint32_t n = static_cast<uint32_t>(job.ranks.size());
    std::vector<uint32_t> all(n);
    for (uint32_t r = 0; r < n; ++r)
    {
        all[r] = r;
    }
    if (p2p == ChakraP2p::Auto)
    {
        const auto& meta = job.ranks.empty() ? std::map<std::string, std::string>{}
                                             : job.ranks.front().metadata;
        auto it = meta.find("p2p");
        p2p = it != meta.end() && it->second == "rendezvous" ? ChakraP2p::Rendezvous
                                                             : ChakraP2p::Eager;
    }
    plan.p2p = p2p;
    std::map<std::string, std::set<uint32_t>> used; // pg -> ranks using it (inferred groups)
    for (uint32_t r = 0; r < n; ++r)
    {
        for (const ChakraNode& c : job.ranks[r].nodes)
        {
            if (c.type == ChakraNodeType::CommColl)
            {
                used[plan.CollComm(c.pgName) == kWorld ? "" : c.pgName].insert(r);
            }
            else if (c.type == ChakraNodeType::CommSend || c.type == ChakraNodeType::CommRecv)
            {
                plan.members[CommPlan::P2pComm(c.commTag)] = all;
            }
        }
    }
    for (const auto& [pg, ranks] : used)
    {
        if (pg.empty())
        {
            plan.members[kWorld] = all;
            continue;
        }
        auto g = job.commGroups.find(pg);
        plan.members["pg:" + pg] = g != job.commGroups.end()
                                       ? g->second
                                       : std::vector<uint32_t>(ranks.begin(), ranks.end());
    }
    return plan;
}

/// Per-rank import state: the graph in topological order and where each node runs.
struct ImportNode
{
    bool empty = false;
    bool cpu = false;
    bool eagerRecv = false;
    bool hostGated = false;
    std::vector<size_t> deps;     //!< resolved dependencies (non-empty nodes)
    std::vector<size_t> recvDeps; //!< eager recv: its own deps, handed to its dependants
    uint32_t thread = 0;
    int64_t stream = 0;
    bool needEvent = false;
    bool needSignal = false;
};

/// Dependencies by index, in data-then-control order; checks ids.
std::vector<std::vector<size_t>>
RawDeps(const ChakraRankFile& f)
{
    std::map<uint64_t, size_t> byId;
    for (size_t i = 0; i < f.nodes.size(); ++i)
    {
        auto [it, fresh] = byId.emplace(f.nodes[i].id, i);
        if (!fresh)
        {
            throw TraceFormatError(f.file, 0,
                                   NodeWhere(f.nodes[i], i) + ": duplicate node id (also node " +
                                       std::to_string(it->second) + ")");
        }
    }
    std::vector<std::vector<size_t>> deps(f.nodes.size());
    for (size_t i = 0; i < f.nodes.size(); ++i)
    {
        const ChakraNode& c = f.nodes[i];
        std::set<size_t> seen;
        for (const auto* list : {&c.dataDeps, &c.ctrlDeps})
        {
            for (uint64_t id : *list)
            {
                auto it = byId.find(id);
                if (it == byId.end())
                {
                    throw TraceFormatError(f.file, 0,
                                           NodeWhere(c, i) + ": depends on unknown node id " +
                                               std::to_string(id));
                }
                if (seen.insert(it->second).second)
                {
                    deps[i].push_back(it->second);
                }
            }
        }
    }
    return deps;
}

/// Kahn's algorithm, lowest file index first among ready nodes (file order when possible).
std::vector<size_t>
TopoOrder(const ChakraRankFile& f, const std::vector<std::vector<size_t>>& deps)
{
    const size_t n = deps.size();
    std::vector<std::vector<size_t>> users(n);
    std::vector<size_t> missing(n);
    for (size_t i = 0; i < n; ++i)
    {
        missing[i] = deps[i].size();
        for (size_t d : deps[i])
        {
            users[d].push_back(i);
        }
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
    for (size_t i = 0; i < n; ++i)
    {
        if (missing[i] == 0)
        {
            ready.push(i);
        }
    }
    std::vector<size_t> order;
    order.reserve(n);
    while (!ready.empty())
    {
        const size_t i = ready.top();
        ready.pop();
        order.push_back(i);
        for (size_t u : users[i])
        {
            if (--missing[u] == 0)
            {
                ready.push(u);
            }
        }
    }
    if (order.size() != n)
    {
        for (size_t i = 0; i < n; ++i)
        {
            if (missing[i])
            {
                throw TraceFormatError(f.file, 0,
                                       NodeWhere(f.nodes[i], i) +
                                           ": dependency cycle (this node is on or behind it)");
            }
        }
    }
    return order;
}

/// True if `to` is among the (resolved) ancestors of `from`; `pos` is the topological
/// position, so the search never goes below `to`'s. Bounded: an edge it cannot prove
/// redundant is kept, which changes nothing but the number of waits.
bool
Reaches(const std::vector<ImportNode>& g, const std::vector<size_t>& pos, size_t from, size_t to,
        size_t& budget)
{
    for (size_t d : g[from].deps)
    {
        if (d == to)
        {
            return true;
        }
        if (pos[d] > pos[to] && budget > 0 && (--budget, Reaches(g, pos, d, to, budget)))
        {
            return true;
        }
    }
    return false;
}

/// Drops dependencies that another dependency already implies.
void
PruneImplied(std::vector<size_t>& deps, const std::vector<ImportNode>& g,
             const std::vector<size_t>& pos)
{
    if (deps.size() < 2 || deps.size() > 64) // quadratic: wide joins keep every edge
    {
        return;
    }
    std::vector<size_t> kept;
    for (size_t x : deps)
    {
        size_t budget = 256;
        bool implied = false;
        for (size_t y : deps)
        {
            if (y != x && pos[y] > pos[x] && Reaches(g, pos, y, x, budget))
            {
                implied = true;
                break;
            }
        }
        if (!implied)
        {
            kept.push_back(x);
        }
    }
    deps.swap(kept);
}

/// Resolves dependencies through empty nodes and eager receives; assigns threads and streams.
std::vector<ImportNode>
PlanRank(const ChakraRankFile& f, const std::vector<size_t>& order, ChakraP2p p2p)
{
    const std::vector<std::vector<size_t>> raw = RawDeps(f);
    std::vector<ImportNode> g(f.nodes.size());
    std::vector<size_t> pos(f.nodes.size());
    for (size_t k = 0; k < order.size(); ++k)
    {
        pos[order[k]] = k;
    }
    auto sameRecvStream = [&](size_t a, size_t b) {
        return g[a].eagerRecv && g[b].eagerRecv && f.nodes[a].commTag == f.nodes[b].commTag &&
               f.nodes[a].commSrc == f.nodes[b].commSrc;
    };
    std::map<int64_t, size_t> streamTail;
    std::set<int64_t> recvStreams;
    std::map<std::pair<int32_t, int32_t>, int64_t> recvStreamOf;
    std::map<uint32_t, size_t> threadBlock;      // thread -> its last blocking node
    std::vector<size_t> blockedAt(f.nodes.size()); // node -> its thread's block when placed
    int64_t nextStream = 1;
    uint32_t nextThread = 1;
    for (size_t i : order)
    {
        const ChakraNode& c = f.nodes[i];
        ImportNode& n = g[i];
        n.empty = IsEmptyNode(c);
        n.cpu = c.type == ChakraNodeType::Comp && c.isCpuOp;
        n.eagerRecv = c.type == ChakraNodeType::CommRecv && p2p == ChakraP2p::Eager;
        auto add = [&n](size_t d) {
            if (std::find(n.deps.begin(), n.deps.end(), d) == n.deps.end())
            {
                n.deps.push_back(d);
            }
        };
        for (size_t d : raw[i])
        {
            if (g[d].empty)
            {
                for (size_t e : g[d].deps)
                {
                    add(e);
                }
                continue;
            }
            add(d);
            for (size_t e : g[d].recvDeps)
            {
                if (!sameRecvStream(d, e)) // the stream already orders those
                {
                    add(e);
                }
            }
        }
        if (n.empty)
        {
            continue;
        }
        PruneImplied(n.deps, g, pos);
        if (n.eagerRecv)
        {
            // Posted at once, so the sender never waits; its dependants wait for its deps.
            n.recvDeps.swap(n.deps);
        }
        n.hostGated = n.cpu;
        for (size_t d : n.deps)
        {
            n.hostGated = n.hostGated || g[d].hostGated;
        }
        // The chain to extend is the most recent dependency that still ends its chain.
        if (!n.cpu)
        {
            if (n.eagerRecv)
            {
                auto key = std::make_pair(c.commTag, c.commSrc);
                auto it = recvStreamOf.find(key);
                n.stream = it != recvStreamOf.end() ? it->second : nextStream++;
                recvStreamOf[key] = n.stream;
                recvStreams.insert(n.stream);
            }
            else
            {
                n.stream = 0;
                for (size_t d : n.deps)
                {
                    if (!g[d].cpu && !recvStreams.count(g[d].stream) &&
                        streamTail[g[d].stream] == d &&
                        (n.stream == 0 || pos[streamTail[n.stream]] < pos[d]))
                    {
                        n.stream = g[d].stream;
                    }
                }
                if (n.stream == 0)
                {
                    n.stream = nextStream++;
                }
            }
            streamTail[n.stream] = i;
        }
        if (n.hostGated)
        {
            // A thread blocks only at host nodes and at device nodes that wait for another
            // host thread; a node that depends on the thread's last such point (or on a node
            // issued after it) joins the thread without waiting longer than its own deps.
            n.thread = 0;
            size_t best = 0;
            for (size_t d : n.deps)
            {
                if (g[d].hostGated && blockedAt[d] == threadBlock[g[d].thread] &&
                    (n.thread == 0 || pos[d] > pos[best]))
                {
                    n.thread = g[d].thread;
                    best = d;
                }
            }
            if (n.thread == 0)
            {
                n.thread = nextThread++;
            }
            bool blocks = n.cpu || !threadBlock.count(n.thread);
            for (size_t d : n.deps)
            {
                blocks = blocks || (g[d].hostGated && g[d].thread != n.thread);
            }
            if (blocks)
            {
                threadBlock[n.thread] = i;
            }
            blockedAt[i] = threadBlock[n.thread];
        }
    }
    for (size_t i : order)
    {
        for (size_t d : g[i].deps)
        {
            g[d].needSignal = g[d].needSignal || g[d].thread != g[i].thread;
            g[d].needEvent = g[d].needEvent || (!g[d].cpu && (g[i].cpu || g[d].stream != g[i].stream));
        }
    }
    return g;
}

/// The device op of a non-host node.
Op
DeviceOp(const ChakraRankFile& f, size_t i, uint32_t rank, const CommPlan& plan,
         std::map<std::string, uint64_t>& seq)
{
    const ChakraNode& c = f.nodes[i];
    auto fail = [&](const std::string& what) {
        throw TraceFormatError(f.file, 0, NodeWhere(c, i) + ": " + what);
    };
    Op op;
    op.name = c.name;
    const double dur = c.exactDurUs >= 0 ? c.exactDurUs
                       : c.durationUs > 0 ? static_cast<double>(c.durationUs)
                                          : -1;
    switch (c.type)
    {
    case ChakraNodeType::Comp:
        op.kind = OpKind::Kernel;
        op.flops = c.numOps;
        op.memBytes = static_cast<double>(c.tensorSize);
        // No duration and nothing to estimate from: an instant node, as ASTRA-sim's replay.
        op.durUs = dur >= 0 ? dur : (c.numOps > 0 || c.tensorSize > 0 ? -1 : 0);
        return op;
    case ChakraNodeType::MemLoad:
    case ChakraNodeType::MemStore:
        op.kind = OpKind::Memcpy;
        op.copyKind = c.type == ChakraNodeType::MemLoad ? MemcpyKind::HostToDevice
                                                        : MemcpyKind::DeviceToHost;
        op.bytes = c.tensorSize;
        op.durUs = dur;
        return op;
    case ChakraNodeType::CommSend:
    case ChakraNodeType::CommRecv: {
        const bool send = c.type == ChakraNodeType::CommSend;
        const int32_t self = send ? c.commSrc : c.commDst;
        const int32_t peer = send ? c.commDst : c.commSrc;
        const uint32_t n = static_cast<uint32_t>(plan.members.at(CommPlan::P2pComm(c.commTag)).size());
        if (self >= 0 && static_cast<uint32_t>(self) != rank)
        {
            fail(std::string(send ? "comm_src" : "comm_dst") + " is " + std::to_string(self) +
                 " but the node is in rank " + std::to_string(rank) + "'s file");
        }
        if (peer < 0 || static_cast<uint32_t>(peer) >= n || static_cast<uint32_t>(peer) == rank)
        {
            fail(std::string(send ? "comm_dst" : "comm_src") +
                 (peer < 0 ? " is missing" : " is " + std::to_string(peer)) +
                 " (need another rank of 0.." + std::to_string(n - 1) + ")");
        }
        op.kind = OpKind::Collective;
        op.coll = send ? CollKind::Send : CollKind::Recv;
        op.comm = CommPlan::P2pComm(c.commTag);
        op.peer = peer;
        op.bytes = c.commSize;
        op.dtype = DataType::U8;
        op.count = c.commSize;
        return op;
    }
    case ChakraNodeType::CommColl:
        break;
    default:
        fail(std::string("unexpected node type ") + ToString(c.type));
    }
    if (c.commType < 0)
    {
        fail("collective without a comm_type attribute");
    }
    op.kind = OpKind::Collective;
    op.comm = plan.CollComm(c.pgName);
    const std::vector<uint32_t>& members = plan.members.at(op.comm);
    if (std::find(members.begin(), members.end(), rank) == members.end())
    {
        fail("rank " + std::to_string(rank) + " is not in process group '" + c.pgName + "'");
    }
    uint64_t bytes = c.commSize;
    switch (static_cast<ChakraCollType>(c.commType))
    {
    case ChakraCollType::AllReduce:
        op.coll = CollKind::AllReduce;
        break;
    case ChakraCollType::Reduce:
        op.coll = CollKind::Reduce;
        break;
    case ChakraCollType::AllGather:
        // comm_size is the per-rank input; the Op IR counts AllGather by its output.
        op.coll = CollKind::AllGather;
        bytes = c.commSize * members.size();
        break;
    case ChakraCollType::Broadcast:
        op.coll = CollKind::Broadcast;
        break;
    case ChakraCollType::AllToAll:
        op.coll = CollKind::AllToAll;
        break;
    case ChakraCollType::ReduceScatter:
    case ChakraCollType::ReduceScatterBlock:
        op.coll = CollKind::ReduceScatter;
        break;
    case ChakraCollType::Barrier:
        // PyTorch's NCCL barrier is an AllReduce of one element.
        op.coll = CollKind::AllReduce;
        bytes = 1;
        break;
    default:
        fail("collective type " +
             (c.commType <= 9 ? std::string(ToString(static_cast<ChakraCollType>(c.commType)))
                              : std::to_string(c.commType)) +
             " is not supported (gpusim runs NCCL's collectives)");
    }
    op.dtype = DataType::U8;
    if (!c.dtype.empty() && !ParseDataType(c.dtype, op.dtype))
    {
        fail("unknown gpusim_dtype '" + c.dtype + "'");
    }
    op.bytes = bytes;
    op.count = bytes / DataTypeSize(op.dtype);
    if (op.coll == CollKind::Broadcast || op.coll == CollKind::Reduce)
    {
        op.root = c.root >= 0 ? c.root : 0;
    }
    op.seq = seq[op.comm]++;
    return op;
}

RankTrace
ImportRank(const ChakraRankFile& f, uint32_t rank, const CommPlan& plan)
{
    const std::vector<size_t> order = TopoOrder(f, RawDeps(f));
    const std::vector<ImportNode> g = PlanRank(f, order, plan.p2p);
    RankTrace rt;
    rt.rank = rank;
    rt.ops.reserve(3 * f.nodes.size() + plan.members.size());
    auto push = [&rt](Op op) { rt.ops.push_back(std::move(op)); };
    for (const auto& [comm, members] : plan.members)
    {
        auto it = std::find(members.begin(), members.end(), rank);
        if (it != members.end())
        {
            Op op;
            op.kind = OpKind::CommInit;
            op.comm = comm;
            op.nranks = static_cast<int32_t>(members.size());
            op.commRank = static_cast<int32_t>(it - members.begin());
            push(op);
        }
    }
    int64_t maxStream = 0;
    for (const ImportNode& n : g)
    {
        maxStream = std::max(maxStream, n.empty || n.cpu ? 0 : n.stream);
    }
    for (int64_t s = 1; s <= maxStream; ++s)
    {
        Op op;
        op.kind = OpKind::StreamCreate;
        op.stream = s;
        op.flags = 1; // non-blocking: no implicit ordering with the legacy stream
        push(op);
    }
    std::map<std::string, uint64_t> seq;
    for (size_t i : order)
    {
        const ImportNode& n = g[i];
        if (n.empty)
        {
            continue;
        }
        const ChakraNode& c = f.nodes[i];
        auto make = [&](OpKind k) {
            Op op;
            op.kind = k;
            op.thread = n.thread;
            op.stream = n.stream;
            return op;
        };
        for (size_t d : n.deps)
        {
            if (g[d].thread != n.thread)
            {
                Op w = make(OpKind::ThreadWait);
                w.token = d + 1;
                push(w);
            }
        }
        for (size_t d : n.deps)
        {
            if (g[d].cpu || (!n.cpu && g[d].stream == n.stream))
            {
                continue; // host order, token or stream order covers it
            }
            Op w = make(n.cpu ? OpKind::EventSync : OpKind::StreamWaitEvent);
            w.stream = n.cpu ? 0 : n.stream;
            w.event = d + 1;
            push(w);
        }
        if (n.cpu)
        {
            Op h = make(OpKind::HostWork);
            h.stream = 0;
            h.name = c.name;
            h.cpuUs = c.exactDurUs >= 0 ? c.exactDurUs : static_cast<double>(c.durationUs);
            push(h);
        }
        else
        {
            Op op = DeviceOp(f, i, rank, plan, seq);
            op.thread = n.thread;
            op.stream = n.stream;
            push(op);
            if (n.needEvent)
            {
                Op r = make(OpKind::EventRecord);
                r.event = i + 1;
                push(r);
            }
        }
        if (n.needSignal)
        {
            Op s = make(OpKind::ThreadSignal);
            s.stream = 0;
            s.token = i + 1;
            push(s);
        }
    }
    return rt;
}

} // namespace

JobTrace
ChakraToJobTrace(const ChakraJob& job, ChakraP2p p2p)
{
    if (job.ranks.empty())
    {
        throw TraceFormatError("", 0, "a Chakra trace needs at least one rank file");
    }
    const CommPlan plan = PlanComms(job, p2p);
    JobTrace out;
    out.source = "chakra";
    out.metadata["chakra_p2p"] = plan.p2p == ChakraP2p::Eager ? "eager" : "rendezvous";
    out.metadata["chakra_version"] = job.ranks.front().version;
    for (uint32_t r = 0; r < job.ranks.size(); ++r)
    {
        out.ranks.push_back(ImportRank(job.ranks[r], r, plan));
    }
    return out;
}

// ---------------------------------------------------------------------------------------
// Export

namespace
{

/// Names of the communicators in the Chakra files: pg_name for collectives ("" for a
/// communicator of all ranks in order) and the tag of send/recv.
struct ExportComms
{
    std::map<std::string, std::vector<uint32_t>> members; // comm id -> global ranks
    std::map<std::string, std::string> pg;                // comm id -> pg_name
    std::map<std::string, int32_t> tag;                   // comm id -> comm_tag
};

ExportComms
NameComms(const JobTrace& job)
{
    ExportComms ec;
    for (const RankTrace& rt : job.ranks)
    {
        for (const Op& op : rt.ops)
        {
            if (op.kind == OpKind::CommInit)
            {
                auto& m = ec.members[op.comm];
                m.resize(std::max<size_t>(m.size(), op.nranks), 0);
                if (op.commRank >= 0 && op.commRank < op.nranks)
                {
                    m[op.commRank] = rt.rank;
                }
            }
        }
    }
    std::set<std::string> usedPg;
    std::set<int32_t> usedTags;
    for (const auto& [comm, m] : ec.members)
    {
        if (comm.rfind("pg:", 0) == 0)
        {
            usedPg.insert(comm.substr(3));
        }
        if (comm.rfind("p2p:", 0) == 0 && comm.size() > 4 &&
            comm.find_first_not_of("0123456789", 4) == std::string::npos && comm.size() < 12)
        {
            usedTags.insert(std::stoi(comm.substr(4)));
        }
    }
    int nextPg = 1;
    int32_t nextTag = 0;
    for (const auto& [comm, m] : ec.members)
    {
        bool world = m.size() == job.ranks.size();
        for (size_t i = 0; world && i < m.size(); ++i)
        {
            world = m[i] == i;
        }
        if (world)
        {
            ec.pg[comm] = "";
        }
        else if (comm.rfind("pg:", 0) == 0)
        {
            ec.pg[comm] = comm.substr(3);
        }
        else
        {
            while (usedPg.count(std::to_string(nextPg)))
            {
                ++nextPg;
            }
            ec.pg[comm] = std::to_string(nextPg);
            usedPg.insert(ec.pg[comm]);
        }
        if (comm.rfind("p2p:", 0) == 0 && usedTags.count(std::atoi(comm.c_str() + 4)) &&
            comm.find_first_not_of("0123456789", 4) == std::string::npos)
        {
            ec.tag[comm] = std::atoi(comm.c_str() + 4);
        }
        else
        {
            while (usedTags.count(nextTag))
            {
                ++nextTag;
            }
            ec.tag[comm] = nextTag;
            usedTags.insert(nextTag);
        }
    }
    return ec;
}

ChakraCollType
ToChakra(CollKind k)
{
    switch (k)
    {
    case CollKind::AllReduce:
        return ChakraCollType::AllReduce;
    case CollKind::AllGather:
        return ChakraCollType::AllGather;
    case CollKind::ReduceScatter:
        return ChakraCollType::ReduceScatter;
    case CollKind::Broadcast:
        return ChakraCollType::Broadcast;
    case CollKind::Reduce:
        return ChakraCollType::Reduce;
    case CollKind::AllToAll:
        return ChakraCollType::AllToAll;
    default:
        throw std::invalid_argument("send/recv are not collectives");
    }
}

/// Builds one rank's DAG from its ops.
class RankExporter
{
  public:
    RankExporter(const ExportComms& comms, uint32_t rank)
        : m_comms(comms),
          m_rank(rank)
    {
    }

    void Add(const Op& op);
    std::vector<ChakraNode> Take() { return std::move(m_nodes); }

  private:
    using Deps = std::vector<uint64_t>;
    uint64_t AddNode(ChakraNode node, Deps deps);
    void Merge(Deps& into, const Deps& from) const;
    Deps Prune(const Deps& deps) const;
    bool Reaches(uint64_t from, uint64_t to, size_t& budget) const;
    ChakraNode DeviceNode(const Op& op) const;

    const ExportComms& m_comms;
    uint32_t m_rank;
    std::vector<ChakraNode> m_nodes;
    std::map<uint32_t, Deps> m_host;      // thread -> what its next op is issued after
    std::map<int64_t, Deps> m_stream;     // stream -> what its next op runs after
    std::map<uint64_t, Deps> m_event;     // event -> what its last record captured
    std::map<uint64_t, Deps> m_token;     // token -> what the signalling thread had done
    std::set<int64_t> m_nonBlocking;

    struct Group
    {
        uint64_t id = 0;                //!< the open ncclGroup (0: none)
        std::map<int64_t, Deps> before; //!< stream -> what it had when the group began
    };

    std::map<uint32_t, Group> m_group; // thread -> its open group
};

void
RankExporter::Merge(Deps& into, const Deps& from) const
{
    for (uint64_t d : from)
    {
        if (std::find(into.begin(), into.end(), d) == into.end())
        {
            into.push_back(d);
        }
    }
}

bool
RankExporter::Reaches(uint64_t from, uint64_t to, size_t& budget) const
{
    // Node ids are positions, and dependencies point backwards: stop below `to`.
    for (uint64_t d : m_nodes[from].dataDeps)
    {
        if (d == to)
        {
            return true;
        }
        if (d > to && budget > 0 && (--budget, Reaches(d, to, budget)))
        {
            return true;
        }
    }
    return false;
}

RankExporter::Deps
RankExporter::Prune(const Deps& deps) const
{
    // Drop a dependency another one already implies (a bounded search: redundant edges
    // left over change nothing but the file size).
    if (deps.size() < 2 || deps.size() > 64)
    {
        return deps;
    }
    Deps out;
    for (uint64_t x : deps)
    {
        bool implied = false;
        size_t budget = 256;
        for (uint64_t y : deps)
        {
            if (y != x && y > x && Reaches(y, x, budget))
            {
                implied = true;
                break;
            }
        }
        if (!implied)
        {
            out.push_back(x);
        }
    }
    return out;
}

uint64_t
RankExporter::AddNode(ChakraNode node, Deps deps)
{
    node.id = m_nodes.size();
    node.dataDeps = Prune(deps);
    m_nodes.push_back(std::move(node));
    return m_nodes.back().id;
}

ChakraNode
RankExporter::DeviceNode(const Op& op) const
{
    ChakraNode c;
    c.name = op.name;
    if (op.durUs >= 0)
    {
        c.durationUs = static_cast<uint64_t>(std::llround(op.durUs));
        c.exactDurUs = op.durUs;
    }
    switch (op.kind)
    {
    case OpKind::Kernel:
        c.type = ChakraNodeType::Comp;
        c.numOps = op.flops;
        c.tensorSize = static_cast<uint64_t>(op.memBytes);
        if (op.flops == 0 && op.gemm.m > 0)
        {
            // GEMM shape only: its FLOPs and the three matrices' bytes.
            const double b = op.gemm.batch;
            c.numOps = 2.0 * op.gemm.m * op.gemm.n * op.gemm.k * b;
            c.tensorSize = static_cast<uint64_t>(
                (op.gemm.m * op.gemm.k + op.gemm.k * op.gemm.n + op.gemm.m * op.gemm.n) * b *
                DataTypeSize(op.gemm.dtype));
        }
        else if (c.numOps == 0 && c.tensorSize > 0)
        {
            // Memory-bound (elementwise, norms, softmax): one operation per 8 bytes moved, an
            // intensity of 1/8 FLOP/byte, under every GPU's ridge point (H100: ~300), so a
            // roofline (ASTRA-sim's) charges tensor_size / bandwidth, not 0 / 0.
            c.numOps = std::ceil(c.tensorSize / 8.0);
        }
        break;
    case OpKind::Memcpy:
        c.type = op.copyKind == MemcpyKind::HostToDevice   ? ChakraNodeType::MemLoad
                 : op.copyKind == MemcpyKind::DeviceToHost ? ChakraNodeType::MemStore
                                                           : ChakraNodeType::Comp;
        c.tensorSize = op.bytes;
        if (c.name.empty())
        {
            c.name = std::string("memcpy_") + ToString(op.copyKind);
        }
        break;
    case OpKind::Memset:
        c.type = ChakraNodeType::Comp;
        c.tensorSize = op.bytes;
        if (c.name.empty())
        {
            c.name = "memset";
        }
        break;
    case OpKind::Collective: {
        c.exactDurUs = -1; // the network decides
        c.durationUs = 0;
        const auto& members = m_comms.members.at(op.comm);
        c.commSize = op.bytes;
        if (op.coll == CollKind::Send || op.coll == CollKind::Recv)
        {
            const bool send = op.coll == CollKind::Send;
            if (op.peer < 0 || static_cast<size_t>(op.peer) >= members.size())
            {
                throw std::invalid_argument("rank " + std::to_string(m_rank) + ": " +
                                            ToString(op.coll) + " peer outside communicator " +
                                            op.comm);
            }
            const int32_t peer = static_cast<int32_t>(members[op.peer]);
            c.type = send ? ChakraNodeType::CommSend : ChakraNodeType::CommRecv;
            c.commSrc = send ? static_cast<int32_t>(m_rank) : peer;
            c.commDst = send ? peer : static_cast<int32_t>(m_rank);
            c.commTag = m_comms.tag.at(op.comm);
        }
        else
        {
            c.type = ChakraNodeType::CommColl;
            c.commType = static_cast<int32_t>(ToChakra(op.coll));
            c.pgName = m_comms.pg.at(op.comm);
            if (op.coll == CollKind::AllGather)
            {
                c.commSize = op.bytes / std::max<size_t>(1, members.size());
            }
            if (op.coll == CollKind::Broadcast || op.coll == CollKind::Reduce)
            {
                c.root = op.root;
            }
            if (op.dtype != DataType::U8)
            {
                c.dtype = ToString(op.dtype);
            }
        }
        if (c.name.empty())
        {
            c.name = ToString(op.coll);
        }
        break;
    }
    default:
        break;
    }
    return c;
}

void
RankExporter::Add(const Op& op)
{
    Deps& host = m_host[op.thread];
    if (op.cpuUs > 0)
    {
        ChakraNode c;
        c.type = ChakraNodeType::Comp;
        c.isCpuOp = true;
        c.name = op.kind == OpKind::HostWork ? op.name : std::string("cpu:") + ToString(op.kind);
        c.durationUs = static_cast<uint64_t>(std::llround(op.cpuUs));
        c.exactDurUs = op.cpuUs;
        host = {AddNode(c, host)};
    }
    switch (op.kind)
    {
    case OpKind::Kernel:
    case OpKind::Memcpy:
    case OpKind::Memset:
    case OpKind::Collective: {
        // Ops of one ncclGroupStart/End launch together: each follows what its stream had
        // before the group, not the group's earlier ops (a grouped send/recv exchange).
        Group& group = m_group[op.thread];
        if (op.group == 0 || group.id != op.group)
        {
            group = Group{op.group, {}};
        }
        auto before = group.before.emplace(op.stream, m_stream[op.stream]).first;
        Deps deps = op.group ? before->second : m_stream[op.stream];
        Merge(deps, host);
        // Legacy default stream: stream 0 and blocking streams order against each other.
        if (op.stream == 0)
        {
            for (const auto& [s, d] : m_stream)
            {
                if (s != 0 && !m_nonBlocking.count(s))
                {
                    Merge(deps, d);
                }
            }
        }
        else if (!m_nonBlocking.count(op.stream))
        {
            Merge(deps, m_stream[0]);
        }
        const uint64_t id = AddNode(DeviceNode(op), deps);
        if (op.group && m_stream[op.stream] != before->second)
        {
            m_stream[op.stream].push_back(id);
        }
        else
        {
            m_stream[op.stream] = {id};
        }
        if (op.kind == OpKind::Memcpy && !op.async)
        {
            host = {id};
        }
        break;
    }
    case OpKind::EventRecord:
        m_event[op.event] = m_stream[op.stream];
        break;
    case OpKind::StreamWaitEvent:
        Merge(m_stream[op.stream], m_event[op.event]);
        break;
    case OpKind::EventSync:
        Merge(host, m_event[op.event]);
        break;
    case OpKind::StreamSync:
        Merge(host, m_stream[op.stream]);
        break;
    case OpKind::DeviceSync:
        for (const auto& [s, d] : m_stream)
        {
            Merge(host, d);
        }
        break;
    case OpKind::StreamCreate:
        if (op.flags & 1)
        {
            m_nonBlocking.insert(op.stream);
        }
        break;
    case OpKind::ThreadSignal:
        m_token[op.token] = host;
        break;
    case OpKind::ThreadWait:
        Merge(host, m_token[op.token]);
        break;
    default:
        break; // host work (above), malloc/free, comm_init and markers add no node
    }
}

} // namespace

ChakraJob
JobTraceToChakra(const JobTrace& job)
{
    const ExportComms comms = NameComms(job);
    ChakraJob out;
    for (const RankTrace& rt : job.ranks)
    {
        RankExporter ex(comms, rt.rank);
        // A shared list, as this rank runs it: its communicators and its peers.
        const RankTrace src = UnsharedRank(job, rt.rank);
        for (const Op& op : src.ops)
        {
            if (op.kind != OpKind::CommInit)
            {
                ex.Add(op);
            }
        }
        ChakraRankFile f;
        f.version = "0.0.4";
        f.metadata["generator"] = "gpusim";
        f.metadata["source"] = job.source;
        auto p2p = job.metadata.find("chakra_p2p");
        f.metadata["p2p"] = p2p != job.metadata.end() ? p2p->second : "rendezvous";
        f.nodes = ex.Take();
        out.ranks.push_back(std::move(f));
    }
    for (const auto& [comm, pg] : comms.pg)
    {
        if (!pg.empty())
        {
            out.commGroups[pg] = comms.members.at(comm);
        }
    }
    return out;
}

} // namespace gpusim
} // namespace ns3
