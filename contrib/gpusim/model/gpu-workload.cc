#include "ns3/gpu-workload.h"

#include "ns3/distributed-run.h"

#include "ns3/boolean.h"
#include "ns3/cluster-topology.h"
#include "ns3/json-writer.h"
#include "ns3/log.h"
#include "ns3/mirror-classes.h"
#include "ns3/object-factory.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("GpuWorkload");
NS_OBJECT_ENSURE_REGISTERED(GpuWorkload);

using gpusim::JsonWriter;
using gpusim::Op;
using gpusim::OpKind;

namespace
{
double
ToUs(Time t)
{
    return t.GetNanoSeconds() / 1e3;
}

/// Sorted, merged [start, end) intervals.
using Intervals = std::vector<std::pair<int64_t, int64_t>>;

Intervals
Merge(Intervals v)
{
    std::sort(v.begin(), v.end());
    Intervals out;
    for (const auto& iv : v)
    {
        if (!out.empty() && iv.first <= out.back().second)
        {
            out.back().second = std::max(out.back().second, iv.second);
        }
        else
        {
            out.push_back(iv);
        }
    }
    return out;
}

int64_t
Length(const Intervals& v)
{
    int64_t s = 0;
    for (const auto& iv : v)
    {
        s += iv.second - iv.first;
    }
    return s;
}

Intervals
Intersect(const Intervals& a, const Intervals& b)
{
    Intervals out;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size())
    {
        int64_t lo = std::max(a[i].first, b[j].first);
        int64_t hi = std::min(a[i].second, b[j].second);
        if (lo < hi)
        {
            out.push_back({lo, hi});
        }
        (a[i].second < b[j].second) ? ++i : ++j;
    }
    return out;
}

Intervals
Clip(const Intervals& v, int64_t lo, int64_t hi)
{
    Intervals out;
    for (const auto& iv : v)
    {
        int64_t a = std::max(iv.first, lo);
        int64_t b = std::min(iv.second, hi);
        if (a < b)
        {
            out.push_back({a, b});
        }
    }
    return out;
}

double
BusBwFactor(gpusim::CollKind k, uint32_t n)
{
    // nccl-tests' bus bandwidth factors.
    switch (k)
    {
    case gpusim::CollKind::AllReduce:
        return n > 1 ? 2.0 * (n - 1) / n : 1.0;
    case gpusim::CollKind::AllGather:
    case gpusim::CollKind::ReduceScatter:
    case gpusim::CollKind::AllToAll:
        return n > 1 ? double(n - 1) / n : 1.0;
    default:
        return 1.0;
    }
}
} // namespace

TypeId
GpuWorkload::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::GpuWorkload")
            .SetParent<Object>()
            .SetGroupName("Gpusim")
            .AddConstructor<GpuWorkload>()
            .AddAttribute("RecordActivities",
                          "Keep every kernel/copy/collective interval (metrics, traces)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&GpuWorkload::m_recordActivities),
                          MakeBooleanChecker())
            .AddAttribute("RecordCollectives",
                          "Keep every collective's record (metrics, traces)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&GpuWorkload::m_recordCollectives),
                          MakeBooleanChecker())
            .AddAttribute("MirrorIdenticalRanks",
                          "Ranks sharing another rank's op list (RankTrace::opsFrom) run as its "
                          "mirrors: no host threads or streams of their own, their collectives "
                          "launched with the representative's (doc/flow-backend.md)",
                          BooleanValue(false),
                          MakeBooleanAccessor(&GpuWorkload::m_mirrorRanks),
                          MakeBooleanChecker())
            .AddAttribute("MirrorSplitClasses",
                          "With MirrorIdenticalRanks: split the ranks sharing a list into "
                          "classes whose members see the same network (SplitMirrorClasses: the "
                          "same result as every rank simulated, more representatives); false: "
                          "one class per list (fewest representatives; replicas whose flows "
                          "collide on ECMP paths are held in lockstep with the others)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&GpuWorkload::m_splitClasses),
                          MakeBooleanChecker())
            .AddAttribute("MirrorMaxClasses",
                          "With MirrorSplitClasses: the most classes (representatives) one op "
                          "list may be split into; splitting stops before a step that would "
                          "exceed it (0: no limit)",
                          UintegerValue(8),
                          MakeUintegerAccessor(&GpuWorkload::m_maxClasses),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("RecordTransfers",
                          "Keep network transfers for the Chrome trace",
                          BooleanValue(false),
                          MakeBooleanAccessor(&GpuWorkload::m_recordTransfers),
                          MakeBooleanChecker())
            .AddAttribute("MaxTransfers",
                          "Most transfers kept for the trace (later ones are counted only)",
                          UintegerValue(200000),
                          MakeUintegerAccessor(&GpuWorkload::m_maxTransfers),
                          MakeUintegerChecker<uint32_t>());
    return tid;
}

GpuWorkload::GpuWorkload()
{
    // Distributed runs (several MPI processes): ns-3's MPI interface set up for this simulation.
    gpusim::DistributedPrepareSimulation();
}

GpuWorkload::~GpuWorkload() = default;

void
GpuWorkload::DoDispose()
{
    for (auto& c : m_contexts)
    {
        c->Dispose();
    }
    m_contexts.clear();
    if (m_world)
    {
        m_world->Dispose();
    }
    m_world = nullptr;
    m_backend = nullptr;
    if (m_feed)
    {
        m_feed->SetNewThreadCallback(nullptr);
    }
    m_feed = nullptr;
    m_rendezvous.clear();
    Object::DoDispose();
}

void
GpuWorkload::Install(std::shared_ptr<const gpusim::JobTrace> job,
                     const NodeContainer& gpus,
                     Ptr<NetworkBackend> backend,
                     Ptr<KernelCostModel> costModel,
                     Ptr<NcclWorld> world,
                     const std::vector<uint32_t>& rankToGpu)
{
    m_job = std::move(job);
    m_backend = backend;
    m_world = world;
    m_world->SetBackend(backend); // takes the world's owner number, which InstallFaults uses
    InstallFaults(gpus);
    const uint32_t n = m_job->ranks.size();
    if (!rankToGpu.empty() && rankToGpu.size() != n)
    {
        throw std::runtime_error("rank-to-GPU map has " + std::to_string(rankToGpu.size()) +
                                 " entries for " + std::to_string(n) + " ranks");
    }
    for (uint32_t r = 0; r < n; ++r)
    {
        Ptr<CudaContext> ctx = MakeContext(gpus, r, n, rankToGpu, costModel);
        Ptr<GpuNode> node = ctx->GetNode();
        // A rank sharing another's op list (ShareIdenticalRanks) runs those ops; its own
        // vector keeps only its comm_init lines, read below.
        const int32_t from = m_job->ranks[r].opsFrom;
        if (from >= static_cast<int32_t>(n) || (from >= 0 && m_job->ranks[from].opsFrom >= 0))
        {
            throw std::runtime_error("rank " + std::to_string(r) + " shares the ops of rank " +
                                     std::to_string(from) + ", which has none of its own");
        }
        // A sharing rank's comm_init lines pair up, in order, with the shared list's: the
        // list's collectives name the list's communicators (which may differ from this rank's),
        // and its sends and receives name peers at offsets from the list owner's comm rank.
        std::vector<const Op*> listInits;
        if (from >= 0)
        {
            for (const Op& op : m_job->ranks[from].ops)
            {
                if (op.kind == OpKind::CommInit)
                {
                    listInits.push_back(&op);
                }
            }
        }
        size_t inits = 0;
        for (const Op& op : m_job->ranks[r].ops)
        {
            if (op.kind != OpKind::CommInit)
            {
                continue;
            }
            Ptr<Communicator> comm = world->Join(op.comm, op.nranks, op.commRank,
                                                 node->GetGpuIndex());
            Ptr<NcclCollective> app = CreateObject<NcclCollective>();
            app->Setup(comm, op.commRank);
            node->AddApplication(app);
            const Op* listInit = inits < listInits.size() ? listInits[inits] : nullptr;
            if (listInit && op.nranks > 0)
            {
                const auto n = static_cast<int64_t>(op.nranks);
                app->SetPeerShift(
                    static_cast<uint32_t>(((op.commRank - listInit->commRank) % n + n) % n));
            }
            ctx->AddCommunicator(listInit ? listInit->comm : op.comm, app);
            ++inits;
        }
        m_contexts.push_back(ctx);
    }
    AssignRepresentatives();
    for (uint32_t r = 0; r < n; ++r)
    {
        for (const Op& op : m_job->ranks[r].ops)
        {
            if (op.kind == OpKind::CommInit && !world->Find(op.comm)->IsComplete())
            {
                std::string missing;
                Ptr<Communicator> c = world->Find(op.comm);
                for (uint32_t k = 0; k < c->GetNRanks(); ++k)
                {
                    if (c->Gpus()[k] == UINT32_MAX)
                    {
                        missing += (missing.empty() ? "" : ", ") + std::to_string(k);
                    }
                }
                throw std::runtime_error("communicator " + op.comm + " has " +
                                         std::to_string(c->GetNRanks()) +
                                         " ranks but comm ranks [" + missing +
                                         "] were never initialised by any rank");
            }
        }
    }
    world->TraceConnectWithoutContext("CollectiveCompleted",
                                      MakeCallback(&GpuWorkload::OnCollective, this));
    if (m_recordTransfers)
    {
        world->TraceConnectWithoutContext("TransferDelivered",
                                          MakeCallback(&GpuWorkload::OnTransfer, this));
    }
}

Ptr<CudaContext>
GpuWorkload::MakeContext(const NodeContainer& gpus,
                         uint32_t r,
                         uint32_t n,
                         const std::vector<uint32_t>& rankToGpu,
                         Ptr<KernelCostModel> costModel)
{
    const uint32_t idx = rankToGpu.empty() ? r : rankToGpu[r];
    if (idx >= gpus.GetN())
    {
        throw std::runtime_error("the job has " + std::to_string(n) +
                                 " ranks but the cluster has only " +
                                 std::to_string(gpus.GetN()) + " GPUs");
    }
    Ptr<GpuNode> node = DynamicCast<GpuNode>(gpus.Get(idx));
    if (!node)
    {
        throw std::runtime_error("node " + std::to_string(idx) + " is not a GpuNode");
    }
    Ptr<CudaContext> ctx = CreateObject<CudaContext>();
    ctx->Setup(node, r, costModel);
    // Peer copies cross the network between the two ranks' GPUs (m_contexts is complete by the
    // time the simulation runs them).
    ctx->SetPeerCopyNetwork(m_world, [this](uint32_t rank, uint32_t& gpu) {
        if (rank >= m_contexts.size())
        {
            return false;
        }
        gpu = m_contexts[rank]->GetNode()->GetGpuIndex();
        return true;
    });
    ctx->TraceConnectWithoutContext("Activity", MakeCallback(&GpuWorkload::OnActivity, this));
    return ctx;
}

void
GpuWorkload::InstallFeed(Ptr<OpFeed> feed,
                         const NodeContainer& gpus,
                         Ptr<NetworkBackend> backend,
                         Ptr<KernelCostModel> costModel,
                         Ptr<NcclWorld> world,
                         const std::vector<uint32_t>& rankToGpu)
{
    // Host steps must keep their canonical order among events of one instant (live runs and
    // their replays then process the same events in the same order).
    ObjectFactory scheduler;
    scheduler.SetTypeId("ns3::HostFirstScheduler");
    Simulator::SetScheduler(scheduler);
    m_feed = feed;
    m_backend = backend;
    m_world = world;
    m_world->SetBackend(backend); // takes the world's owner number, which InstallFaults uses
    InstallFaults(gpus);
    const uint32_t n = feed->GetNRanks();
    if (!rankToGpu.empty() && rankToGpu.size() != n)
    {
        throw std::runtime_error("rank-to-GPU map has " + std::to_string(rankToGpu.size()) +
                                 " entries for " + std::to_string(n) + " ranks");
    }
    for (uint32_t r = 0; r < n; ++r)
    {
        Ptr<CudaContext> ctx = MakeContext(gpus, r, n, rankToGpu, costModel);
        for (uint32_t t : feed->KnownThreads(r))
        {
            ctx->AddFeedThread(t, feed);
        }
        ctx->SetCommInitHandler([this, r](const Op& op, std::function<void()> resume) {
            return LiveCommInit(r, op, std::move(resume));
        });
        m_contexts.push_back(ctx);
    }
    // A thread first seen mid-run starts from the job's time origin, like the threads known
    // at install (a replay of the recording knows them all from the start).
    feed->SetNewThreadCallback([this](uint32_t rank, uint32_t thread) {
        m_contexts.at(rank)->AddFeedThread(thread, m_feed)->StartFrom(m_start);
    });
    world->TraceConnectWithoutContext("CollectiveCompleted",
                                      MakeCallback(&GpuWorkload::OnCollective, this));
    if (m_recordTransfers)
    {
        world->TraceConnectWithoutContext("TransferDelivered",
                                          MakeCallback(&GpuWorkload::OnTransfer, this));
    }
}

Ptr<OpFeed>
GpuWorkload::GetFeed() const
{
    return m_feed;
}

bool
GpuWorkload::LiveCommInit(uint32_t rank, const Op& op, std::function<void()> resume)
{
    Ptr<CudaContext> ctx = m_contexts.at(rank);
    if (op.nranks <= 0 || op.commRank < 0 || op.commRank >= op.nranks)
    {
        ctx->AddError("rank " + std::to_string(rank) + ": comm_init of " + op.comm +
                      " with rank " + std::to_string(op.commRank) + " of " +
                      std::to_string(op.nranks));
        return false;
    }
    if (!ctx->GetCommunicator(op.comm))
    {
        Ptr<GpuNode> node = ctx->GetNode();
        Ptr<Communicator> comm =
            m_world->Join(op.comm, op.nranks, op.commRank, node->GetGpuIndex());
        Ptr<NcclCollective> app = CreateObject<NcclCollective>();
        app->Setup(comm, op.commRank);
        node->AddApplication(app);
        ctx->AddCommunicator(op.comm, app);
    }
    InitRendezvous& rv = m_rendezvous[op.comm];
    if (++rv.arrived < static_cast<uint32_t>(op.nranks))
    {
        rv.waiting.push_back(std::move(resume));
        return true;
    }
    // The last member to arrive releases the others at this instant, in arrival order.
    for (auto& w : rv.waiting)
    {
        Simulator::ScheduleNow(std::move(w));
    }
    m_rendezvous.erase(op.comm);
    return false;
}

void
GpuWorkload::Start(Time at)
{
    m_start = Simulator::Now() + at;
    for (auto& c : m_contexts)
    {
        Ptr<CudaContext> ctx = c;
        Simulator::Schedule(at, [ctx]() { ctx->StartThreads(); });
    }
}

void
GpuWorkload::OnActivity(const StreamActivity& a)
{
    if (m_recordActivities)
    {
        m_activities.push_back(a);
    }
}

void
GpuWorkload::OnCollective(const CollectiveRecord& r)
{
    if (m_recordCollectives)
    {
        m_collectives.push_back(r);
    }
}

bool
GpuWorkload::Mirrorable(uint32_t owner)
{
    if (!m_mirrorRanks)
    {
        return false;
    }
    auto [it, fresh] = m_mirrorable.try_emplace(owner, true);
    if (fresh)
    {
        // Peer copies name absolute ranks (src_rank, dst_rank): a mirror cannot re-target them.
        for (const Op& op : m_job->ranks[owner].ops)
        {
            if (op.kind == OpKind::Memcpy && op.copyKind == gpusim::MemcpyKind::PeerToPeer &&
                (op.srcRank >= 0 || op.dstRank >= 0))
            {
                it->second = false;
                break;
            }
        }
    }
    return it->second;
}

void
GpuWorkload::AssignRepresentatives()
{
    // Which list each rank runs, and which ranks may mirror one another: those sharing a
    // mirrorable list, split until each class sees the same network (SplitMirrorClasses).
    const uint32_t n = m_contexts.size();
    std::set<uint32_t> sharedLists;
    for (uint32_t r = 0; r < n; ++r)
    {
        if (m_job->ranks[r].opsFrom >= 0)
        {
            sharedLists.insert(static_cast<uint32_t>(m_job->ranks[r].opsFrom));
        }
    }
    std::vector<int32_t> listOf(n, -1);
    for (uint32_t r = 0; r < n; ++r)
    {
        const int32_t from = m_job->ranks[r].opsFrom;
        const uint32_t owner = from >= 0 ? static_cast<uint32_t>(from) : r;
        const bool shared = from >= 0 || sharedLists.count(r) != 0;
        if (shared && Mirrorable(owner))
        {
            listOf[r] = static_cast<int32_t>(owner);
        }
    }
    std::vector<uint32_t> rep(n);
    for (uint32_t r = 0; r < n; ++r)
    {
        rep[r] = r;
    }
    if (m_mirrorRanks && m_splitClasses)
    {
        UintegerValue channels;
        m_world->GetAttribute("Channels", channels);
        rep = SplitMirrorClasses(*m_job, m_contexts, listOf, m_world->GetTopology(),
                                 static_cast<uint32_t>(channels.Get()), m_maxClasses);
    }
    else if (m_mirrorRanks)
    {
        for (uint32_t r = 0; r < n; ++r)
        {
            rep[r] = listOf[r] >= 0 ? static_cast<uint32_t>(listOf[r]) : r;
        }
    }
    for (uint32_t r = 0; r < n; ++r)
    {
        const int32_t from = m_job->ranks[r].opsFrom;
        if (rep[r] == r)
        {
            m_contexts[r]->Load(m_job->ranks[from >= 0 ? from : r]);
        }
        else
        {
            m_contexts[rep[r]]->AddMirror(m_contexts[r]);
        }
    }
    if (m_mirrorRanks)
    {
        AssignTwinComms();
    }
}

void
GpuWorkload::AssignTwinComms()
{
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    if (!topo)
    {
        return;
    }
    // Communicators using each GPU's NVLink ports: those with another member on its server.
    std::map<uint32_t, uint32_t> nvlinkUsers;
    for (const auto& [name, c] : m_world->GetCommunicators())
    {
        std::map<uint32_t, std::vector<uint32_t>> byServer;
        for (uint32_t gpu : c->Gpus())
        {
            byServer[topo->ServerOf(gpu)].push_back(gpu);
        }
        for (const auto& [server, members] : byServer)
        {
            for (uint32_t gpu : members)
            {
                nvlinkUsers[gpu] += members.size() >= 2 ? 1 : 0;
            }
        }
    }
    // One server, and no other communicator on its members' NVLink ports: its traffic stays
    // on links nothing else uses.
    auto isPrivate = [&](const Communicator& c) {
        if (c.GetNRanks() < 2 || c.NumServers() != 1)
        {
            return false;
        }
        for (uint32_t gpu : c.Gpus())
        {
            if (nvlinkUsers[gpu] != 1)
            {
                return false;
            }
        }
        return true;
    };
    std::map<uint32_t, uint32_t> rankOfGpu;
    for (uint32_t r = 0; r < m_contexts.size(); ++r)
    {
        rankOfGpu[m_contexts[r]->GetNode()->GetGpuIndex()] = r;
    }
    for (uint32_t r = 0; r < m_contexts.size(); ++r)
    {
        const int32_t rep = m_contexts[r]->GetMirrorOf();
        if (rep < 0)
        {
            continue;
        }
        std::set<std::string> twins;
        for (const auto& [name, repApp] : m_contexts[rep]->GetCommunicators())
        {
            Ptr<NcclCollective> mine = m_contexts[r]->GetCommunicator(name);
            if (!mine)
            {
                continue;
            }
            const Communicator& cm = *mine->GetCommunicator();
            const Communicator& cr = *repApp->GetCommunicator();
            if (&cm == &cr || cm.GetNRanks() != cr.GetNRanks() || !isPrivate(cm) ||
                !isPrivate(cr))
            {
                continue;
            }
            bool same = true; // the same local GPUs in comm-rank order (an isomorphic group)
            for (uint32_t k = 0; k < cm.GetNRanks() && same; ++k)
            {
                same = topo->LocalIndex(cm.GpuOf(k)) == topo->LocalIndex(cr.GpuOf(k));
            }
            // The twin's completion stands for that of the member with the same comm rank in
            // the representative's group, which must be in the lockstep (the rep or a mirror
            // of it launching there).
            const uint32_t counterpart = rankOfGpu[cr.GpuOf(mine->GetCommRank())];
            const bool inClass = counterpart == static_cast<uint32_t>(rep) ||
                                 m_contexts[counterpart]->GetMirrorOf() == rep;
            if (same && inClass)
            {
                twins.insert(name);
            }
        }
        m_contexts[r]->SetTwinComms(std::move(twins));
    }
}

uint32_t
GpuWorkload::RepresentativeOf(uint32_t rank) const
{
    const int32_t rep = m_contexts.at(rank)->GetMirrorOf();
    return rep >= 0 ? static_cast<uint32_t>(rep) : rank;
}

GpuWorkload::MirrorSummary
GpuWorkload::GetMirrorSummary() const
{
    MirrorSummary m;
    for (const auto& ctx : m_contexts)
    {
        if (ctx->GetMirrorOf() >= 0)
        {
            ++m.mirrored;
            continue;
        }
        ++m.representatives;
        const CudaContext::MirrorStats& s = ctx->GetMirrorStats();
        m.launches += s.launches;
        m.diverged += s.diverged;
        m.maxDivergence = std::max(m.maxDivergence, s.maxDivergence);
    }
    return m;
}

void
GpuWorkload::InstallFaults(const NodeContainer& gpus)
{
    for (uint32_t i = 0; i < gpus.GetN(); ++i)
    {
        Ptr<GpuNode> node = DynamicCast<GpuNode>(gpus.Get(i));
        if (node && node->IsStraggler())
        {
            // A straggler's rank runs at its own pace: no rank may stand in for another.
            m_mirrorRanks = false;
        }
    }
    Ptr<ClusterTopology> topo = m_backend ? m_backend->GetTopology() : nullptr;
    if (!topo || topo->GetFabricEvents().empty())
    {
        return;
    }
    if (!m_backend->HasFabricEvents())
    {
        if (!topo->GetRoutingConvergence().IsNegative())
        {
            m_backend->SetAttribute("RoutingConvergence",
                                    TimeValue(topo->GetRoutingConvergence()));
        }
        m_backend->ScheduleFabricEvents(topo->GetFabricEvents());
    }
    m_backend->SetTransferFailedCallback(
        m_world->GetOwner(),
        [this](const TransferRecord& r, const std::string& why) { OnTransferFailed(r, why); });
}

void
GpuWorkload::OnTransferFailed(const TransferRecord& r, const std::string& why)
{
    // NCCL has no way around a peer it cannot reach: the transport's completion comes back
    // with an error (InfiniBand/RoCE: the queue pair's retries exhausted, "NET/IB : Got
    // completion ... with error 12" = IBV_WC_RETRY_EXC_ERR), the collective returns
    // ncclRemoteError / ncclSystemError to every rank waiting on it, and the framework
    // aborts the job (PyTorch's watchdog tears the process group down). So does the run:
    // the first failed transfer is reported and the simulation stops instead of hanging.
    if (m_networkFailed)
    {
        return;
    }
    m_networkFailed = true;
    std::ostringstream os;
    os << "NCCL error ncclRemoteError at " << ToUs(Simulator::Now()) << " us: transfer GPU "
       << r.srcGpu << " -> GPU " << r.dstGpu << " (" << r.bytes << " bytes, started at "
       << ToUs(r.start) << " us) has no path: " << why;
    const std::string pending = m_world ? m_world->DescribePendingFor(r.srcGpu, r.dstGpu) : "";
    if (!pending.empty())
    {
        os << "; failed collective(s): " << pending;
    }
    os << "; the job aborts";
    m_runErrors.push_back(os.str());
    if (m_backend->GetNOwners() <= 1)
    {
        Simulator::Stop(); // alone on the fabric: nothing else to simulate
    }
    // Else the other jobs (and background traffic) run on; this one's transfers stay waiting
    // and its report says it failed.
}

void
GpuWorkload::OnTransfer(const TransferRecord& r)
{
    if (m_transfers.size() < m_maxTransfers)
    {
        m_transfers.push_back(r);
    }
}

RunReport
GpuWorkload::Check() const
{
    RunReport rep;
    rep.completed = true;
    std::ostringstream stuck;
    for (const auto& ctx : m_contexts)
    {
        for (const auto& t : ctx->GetThreads())
        {
            rep.endTime = std::max(rep.endTime, t->GetFinishTime());
        }
        if (!ctx->IsFinished())
        {
            rep.completed = false;
            stuck << ctx->DescribeState();
        }
        for (const auto& e : ctx->GetErrors())
        {
            rep.errors.push_back(e);
        }
    }
    for (const auto& e : m_runErrors)
    {
        rep.errors.push_back(e);
    }
    if (m_world->HasPending())
    {
        rep.completed = false;
        stuck << m_world->DescribePending();
    }
    if (m_backend)
    {
        for (const auto& t : m_backend->InFlight())
        {
            if (NetworkBackend::OwnerOf(t.id) != m_world->GetOwner())
            {
                continue; // another job's (or background traffic's) on a shared fabric
            }
            rep.completed = false;
            stuck << "  transfer " << t.id << " GPU " << t.srcGpu << " -> GPU " << t.dstGpu << " ("
                  << t.bytes << " bytes) started at " << ToUs(t.start) << " us never delivered\n";
        }
    }
    rep.stuck = stuck.str();
    for (const auto& a : m_activities)
    {
        rep.endTime = std::max(rep.endTime, a.end);
    }
    return rep;
}

uint32_t
GpuWorkload::GetNRanks() const
{
    return m_contexts.size();
}

Ptr<CudaContext>
GpuWorkload::GetContext(uint32_t rank) const
{
    return m_contexts.at(rank);
}

Ptr<NcclWorld>
GpuWorkload::GetNcclWorld() const
{
    return m_world;
}

const std::vector<CollectiveRecord>&
GpuWorkload::GetCollectives() const
{
    return m_collectives;
}

const std::vector<StreamActivity>&
GpuWorkload::GetActivities() const
{
    return m_activities;
}

void
GpuWorkload::Breakdown(uint32_t rank, IterationRecord& it) const
{
    Intervals compute, comm;
    for (const auto& a : m_activities)
    {
        if (a.rank != rank)
        {
            continue;
        }
        (a.communication ? comm : compute)
            .push_back({a.start.GetNanoSeconds(), a.end.GetNanoSeconds()});
    }
    const int64_t lo = it.start.GetNanoSeconds();
    const int64_t hi = it.end.GetNanoSeconds();
    Intervals c = Merge(Clip(compute, lo, hi));
    Intervals m = Merge(Clip(comm, lo, hi));
    const int64_t both = Length(Intersect(c, m));
    const int64_t cLen = Length(c);
    const int64_t mLen = Length(m);
    it.overlapUs = both / 1e3;
    it.computeOnlyUs = (cLen - both) / 1e3;
    it.commOnlyUs = (mLen - both) / 1e3;
    it.idleUs = std::max<int64_t>(0, (hi - lo) - (cLen + mLen - both)) / 1e3;
}

std::vector<IterationRecord>
GpuWorkload::GetIterations() const
{
    std::vector<IterationRecord> out;
    for (const auto& ctx : m_contexts)
    {
        if (ctx->GetMirrorOf() >= 0)
        {
            continue; // a mirror's iterations are its representative's
        }
        std::map<std::string, std::pair<const MarkerRecord*, const MarkerRecord*>> spans;
        std::vector<std::string> order;
        for (const auto& m : ctx->GetMarkers())
        {
            if (m.op->name.rfind("ProfilerStep", 0) != 0 &&
                m.op->name.rfind("iteration", 0) != 0)
            {
                continue;
            }
            auto& span = spans[m.op->name];
            if (m.op->phase == gpusim::MarkerPhase::Begin)
            {
                if (!span.first)
                {
                    order.push_back(m.op->name);
                }
                span.first = &m;
            }
            else if (m.op->phase == gpusim::MarkerPhase::End)
            {
                span.second = &m;
            }
        }
        bool any = false;
        for (const auto& name : order)
        {
            const auto& [b, e] = spans[name];
            if (!b || !e)
            {
                continue;
            }
            IterationRecord it;
            it.rank = ctx->GetRank();
            it.name = name;
            it.start = b->time;
            it.end = e->time;
            if (b->op->recordedUs >= 0 && e->op->recordedUs >= 0)
            {
                it.recordedUs = e->op->recordedUs - b->op->recordedUs;
            }
            Breakdown(it.rank, it);
            out.push_back(it);
            any = true;
        }
        if (!any)
        {
            IterationRecord it;
            it.rank = ctx->GetRank();
            it.name = "run";
            it.start = Seconds(0);
            for (const auto& t : ctx->GetThreads())
            {
                it.end = std::max(it.end, t->GetFinishTime());
            }
            for (const auto& a : m_activities)
            {
                if (a.rank == it.rank)
                {
                    it.end = std::max(it.end, a.end);
                }
            }
            Breakdown(it.rank, it);
            out.push_back(it);
        }
    }
    return out;
}

std::string
GpuWorkload::MetricsJson() const
{
    RunReport rep = Check();
    JsonWriter w;
    w.BeginObject();
    w.Key("completed").Bool(rep.completed);
    w.Key("end_us").Double(ToUs(rep.endTime));
    w.Key("errors").BeginArray();
    for (const auto& e : rep.errors)
    {
        w.String(e);
    }
    w.EndArray();
    w.Key("ranks").BeginArray();
    for (const auto& ctx : m_contexts)
    {
        w.BeginObject().Key("rank").Uint(ctx->GetRank());
        w.Key("gpu").Uint(ctx->GetNode()->GetGpuIndex());
        w.Key("peak_memory_bytes").Uint(ctx->GetNode()->GetPeakMemoryUsed());
        w.Key("streams").Uint(ctx->GetStreams().size());
        w.EndObject();
    }
    w.EndArray();
    w.Key("iterations").BeginArray();
    for (const auto& it : GetIterations())
    {
        w.BeginObject();
        w.Key("rank").Uint(it.rank).Key("name").String(it.name);
        w.Key("start_us").Double(ToUs(it.start)).Key("end_us").Double(ToUs(it.end));
        w.Key("simulated_us").Double(ToUs(it.end - it.start));
        if (it.recordedUs >= 0)
        {
            w.Key("recorded_us").Double(it.recordedUs);
        }
        w.Key("breakdown").BeginObject();
        w.Key("exposed_compute_us").Double(it.computeOnlyUs);
        w.Key("exposed_comm_us").Double(it.commOnlyUs);
        w.Key("overlap_us").Double(it.overlapUs);
        w.Key("idle_us").Double(it.idleUs);
        w.EndObject().EndObject();
    }
    w.EndArray();
    w.Key("collectives").BeginArray();
    for (const auto& c : m_collectives)
    {
        const double us = ToUs(c.End() - c.FirstJoin());
        const double algbw = us > 0 ? c.bytes / (us * 1e-6) / 1e9 : 0;
        w.BeginObject();
        w.Key("comm").String(c.comm).Key("seq").Uint(c.seq);
        w.Key("op").String(gpusim::ToString(c.kind)).Key("bytes").Uint(c.bytes);
        w.Key("ranks").Uint(c.nranks).Key("algo").String(c.plan.algo);
        w.Key("proto").String(c.plan.proto).Key("channels").Uint(c.plan.channels);
        w.Key("start_us").Double(ToUs(c.FirstJoin())).Key("last_join_us").Double(ToUs(c.LastJoin()));
        w.Key("end_us").Double(ToUs(c.End())).Key("time_us").Double(us);
        w.Key("algbw_GBps").Double(algbw);
        w.Key("busbw_GBps").Double(algbw * BusBwFactor(c.kind, c.nranks));
        w.Key("transfers").Uint(c.transfers);
        w.Key("path").String(ToString(c.path));
        if (c.path == CollectivePath::Chunk)
        {
            w.Key("chunk_reason").String(ToString(c.chunkReason));
        }
        w.EndObject();
    }
    w.EndArray();
    if (GetNcclWorld())
    {
        // How the collectives ran (NcclWorld Fidelity): shortcuts taken, chunk level and why.
        w.Key("fidelity").Raw(GetNcclWorld()->GetFidelityStats().Json());
    }
    if (m_backend)
    {
        w.Key("network").Raw(m_backend->StatsJson());
    }
    if (!rep.completed)
    {
        w.Key("stuck").String(rep.stuck);
    }
    w.EndObject();
    return w.Take() + "\n";
}

std::string
GpuWorkload::ChromeTraceJson() const
{
    JsonWriter w;
    w.BeginObject();
    w.Key("displayTimeUnit").String("ns");
    w.Key("traceEvents").BeginArray();
    WriteChromeTraceEvents(w);
    w.EndArray().EndObject();
    return w.Take() + "\n";
}

void
GpuWorkload::WriteChromeTraceEvents(JsonWriter& w) const
{
    auto meta = [&w](const char* what, uint32_t pid, int64_t tid, const std::string& name) {
        w.BeginObject().Key("ph").String("M").Key("name").String(what);
        w.Key("pid").Uint(pid).Key("tid").Int(tid);
        w.Key("args").BeginObject().Key("name").String(name).EndObject().EndObject();
    };
    const int64_t kHostTid = 1000000; // host threads after streams
    for (const auto& ctx : m_contexts)
    {
        const uint32_t pid = ctx->GetRank();
        meta("process_name", pid, 0,
             "rank " + std::to_string(pid) + " (GPU " +
                 std::to_string(ctx->GetNode()->GetGpuIndex()) + ")");
        for (const auto& [id, s] : ctx->GetStreams())
        {
            meta("thread_name", pid, id, "stream " + std::to_string(id));
        }
        for (const auto& t : ctx->GetThreads())
        {
            meta("thread_name", pid, kHostTid + t->GetIndex(),
                 "host thread " + std::to_string(t->GetIndex()));
        }
        // Iterations and other begin/end markers as host-track slices.
        std::map<std::pair<uint32_t, std::string>, Time> open;
        for (const auto& m : ctx->GetMarkers())
        {
            auto key = std::make_pair(m.thread, m.op->name);
            if (m.op->phase == gpusim::MarkerPhase::Begin)
            {
                open[key] = m.time;
            }
            else if (m.op->phase == gpusim::MarkerPhase::End && open.count(key))
            {
                w.BeginObject().Key("ph").String("X").Key("cat").String("user_annotation");
                w.Key("name").String(m.op->name).Key("pid").Uint(pid);
                w.Key("tid").Int(kHostTid + m.thread);
                w.Key("ts").Double(ToUs(open[key])).Key("dur").Double(ToUs(m.time - open[key]));
                w.EndObject();
                open.erase(key);
            }
        }
    }
    for (const auto& a : m_activities)
    {
        const Op& op = *a.op;
        std::string name = op.name;
        std::string cat = a.communication ? "nccl" : gpusim::ToString(op.kind);
        if (a.communication)
        {
            name = std::string("nccl:") + gpusim::ToString(op.coll) + " " +
                   std::to_string(op.bytes) + "B";
        }
        else if (name.empty())
        {
            name = gpusim::ToString(op.kind);
        }
        w.BeginObject().Key("ph").String("X").Key("cat").String(cat);
        w.Key("name").String(name).Key("pid").Uint(a.rank).Key("tid").Int(a.stream);
        w.Key("ts").Double(ToUs(a.start)).Key("dur").Double(ToUs(a.end - a.start));
        if (a.communication)
        {
            w.Key("args").BeginObject().Key("comm").String(op.comm).Key("seq").Uint(op.seq);
            w.EndObject();
        }
        w.EndObject();
    }
    // Network transfers: async slices on the sending rank's process ("network" track).
    std::map<uint32_t, uint32_t> rankOfGpu;
    for (const auto& ctx : m_contexts)
    {
        rankOfGpu[ctx->GetNode()->GetGpuIndex()] = ctx->GetRank();
    }
    for (const auto& t : m_transfers)
    {
        auto it = rankOfGpu.find(t.srcGpu);
        const uint32_t pid = it == rankOfGpu.end() ? t.srcGpu : it->second;
        const std::string name = "GPU " + std::to_string(t.srcGpu) + " -> GPU " +
                                 std::to_string(t.dstGpu);
        for (int phase = 0; phase < 2; ++phase)
        {
            w.BeginObject().Key("ph").String(phase == 0 ? "b" : "e").Key("cat").String("transfer");
            w.Key("name").String(name).Key("id").Uint(t.id).Key("pid").Uint(pid);
            w.Key("tid").Int(0);
            w.Key("ts").Double(ToUs(phase == 0 ? t.start : t.delivered));
            if (phase == 0)
            {
                w.Key("args").BeginObject().Key("bytes").Uint(t.bytes).EndObject();
            }
            w.EndObject();
        }
    }
    if (m_backend)
    {
        m_backend->WriteTraceCounters(w); // queue / rate counter tracks, if any
    }
}

} // namespace ns3
