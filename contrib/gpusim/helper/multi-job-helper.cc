#include "ns3/multi-job-helper.h"

#include "ns3/flow-backend.h"
#include "ns3/json-writer.h"
#include "ns3/log.h"
#include "ns3/abort.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MultiJobHelper");

MultiJobHelper::MultiJobHelper(const NodeContainer& gpus, Ptr<ClusterTopology> topology)
    : m_gpus(gpus),
      m_topology(topology),
      m_owner(topology->GetNGpus())
{
}

uint32_t
MultiJobHelper::AddJob(const std::string& name,
                       std::shared_ptr<const gpusim::JobTrace> job,
                       const JobPlacement& placement,
                       Time start)
{
    if (!job)
    {
        throw std::runtime_error("job '" + name + "': no workload");
    }
    const auto ranks = static_cast<uint32_t>(job->ranks.size());
    Job j;
    j.trace = std::move(job);
    return Add(std::move(j), name, ranks, placement, start);
}

uint32_t
MultiJobHelper::AddJob(const std::string& name,
                       Ptr<OpFeed> feed,
                       const JobPlacement& placement,
                       Time start)
{
    if (!feed)
    {
        throw std::runtime_error("job '" + name + "': no workload");
    }
    const uint32_t ranks = feed->GetNRanks();
    Job j;
    j.feed = feed;
    return Add(std::move(j), name, ranks, placement, start);
}

uint32_t
MultiJobHelper::Add(Job j,
                    const std::string& name,
                    uint32_t ranks,
                    const JobPlacement& placement,
                    Time start)
{
    if (name.empty())
    {
        throw std::runtime_error("a job needs a name");
    }
    for (const Job& other : m_jobs)
    {
        if (other.name == name)
        {
            throw std::runtime_error("job '" + name + "': the name is used twice");
        }
    }
    if (start.IsStrictlyNegative())
    {
        throw std::runtime_error("job '" + name + "': negative start time");
    }
    j.name = name;
    j.placement = placement;
    j.start = start;
    j.gpus = PlaceJob(*m_topology, name, ranks, placement, m_owner);
    NS_LOG_INFO("job " << name << ": " << j.gpus.size() << " ranks, " << placement.ToString());
    m_jobs.push_back(std::move(j));
    return static_cast<uint32_t>(m_jobs.size() - 1);
}

void
MultiJobHelper::Install(GpuWorkloadHelper& helper)
{
    for (Job& j : m_jobs)
    {
        if (!j.workload)
        {
            // In job order: job k takes owner k on the backend (its transfer ids' top bits).
            j.workload = j.feed ? helper.InstallFeed(j.feed, m_gpus, j.start, j.gpus)
                                : helper.Install(j.trace, m_gpus, j.start, j.gpus);
        }
    }
    for (const Ptr<BackgroundTraffic>& bg : m_background)
    {
        if (!bg->IsInstalled())
        {
            NS_ABORT_MSG_IF(!helper.GetBackend(), "MultiJobHelper::Install: no backend");
            bg->Install(helper.GetBackend());
        }
    }
}

void
MultiJobHelper::AddBackground(Ptr<BackgroundTraffic> traffic)
{
    NS_ASSERT(traffic);
    for (uint32_t g = 0; g < traffic->GetNGenerators(); ++g)
    {
        const std::string& name = traffic->GetSpec(g).name;
        for (const Ptr<BackgroundTraffic>& other : m_background)
        {
            for (uint32_t o = 0; o < other->GetNGenerators(); ++o)
            {
                if (other->GetSpec(o).name == name)
                {
                    throw std::invalid_argument("background generator name '" + name +
                                                "' is used twice");
                }
            }
        }
    }
    m_background.push_back(traffic);
}

const std::vector<Ptr<BackgroundTraffic>>&
MultiJobHelper::GetBackground() const
{
    return m_background;
}

uint32_t
MultiJobHelper::GetNJobs() const
{
    return static_cast<uint32_t>(m_jobs.size());
}

Ptr<GpuWorkload>
MultiJobHelper::GetWorkload(uint32_t job) const
{
    return m_jobs.at(job).workload;
}

const std::vector<uint32_t>&
MultiJobHelper::GetGpus(uint32_t job) const
{
    return m_jobs.at(job).gpus;
}

std::vector<JobReport>
MultiJobHelper::Reports() const
{
    std::vector<JobReport> out;
    for (const Job& j : m_jobs)
    {
        JobReport r;
        r.name = j.name;
        r.gpus = j.gpus;
        r.placement = j.placement.ToString();
        r.start = j.start;
        if (!j.workload)
        {
            out.push_back(r);
            continue;
        }
        r.run = j.workload->Check();
        std::map<std::string, size_t> index;
        std::map<std::string, uint32_t> ranks;
        for (const IterationRecord& it : j.workload->GetIterations())
        {
            auto [pos, fresh] = index.emplace(it.name, r.iterations.size());
            if (fresh)
            {
                JobIteration ji;
                ji.name = it.name;
                ji.start = std::max(it.start, j.start); // "run" spans start at 0
                ji.end = it.end;
                r.iterations.push_back(ji);
            }
            JobIteration& ji = r.iterations[pos->second];
            ji.start = std::min(ji.start, std::max(it.start, j.start));
            ji.end = std::max(ji.end, it.end);
            ji.exposedCommUs += it.commOnlyUs;
            ++ranks[it.name];
        }
        for (JobIteration& ji : r.iterations)
        {
            ji.exposedCommUs /= std::max<uint32_t>(1, ranks[ji.name]);
        }
        r.collectives = j.workload->GetCollectives().size();
        out.push_back(r);
    }
    return out;
}

uint32_t
MultiJobHelper::LinkUse::Jobs() const
{
    return static_cast<uint32_t>(
        std::count_if(bytes.begin(), bytes.end(), [](double b) { return b > 0; }));
}

std::vector<MultiJobHelper::LinkUse>
MultiJobHelper::FabricUse(Ptr<NetworkBackend> backend, bool fabricOnly) const
{
    std::vector<LinkUse> out;
    // Per owner and link (with one owner on the backend, all of a link's bytes are owner 0's).
    const std::vector<std::vector<double>> byOwner = backend->GetOwnerLinkBytes();
    const auto& links = m_topology->Links();
    const auto& vertices = m_topology->Vertices();
    std::vector<double> total(links.size(), 0.0);
    for (const auto& perLink : byOwner)
    {
        for (size_t l = 0; l < perLink.size() && l < total.size(); ++l)
        {
            total[l] += perLink[l];
        }
    }
    std::vector<uint32_t> bgOwners; // per background generator
    for (const Ptr<BackgroundTraffic>& bg : m_background)
    {
        for (uint32_t g = 0; g < bg->GetNGenerators(); ++g)
        {
            bgOwners.push_back(bg->IsInstalled() ? bg->GetOwner(g) : UINT32_MAX);
        }
    }
    for (uint32_t l = 0; l < links.size() && l < total.size(); ++l)
    {
        if (total[l] <= 0 || (fabricOnly && links[l].kind != TopoLinkKind::Fabric &&
                              links[l].kind != TopoLinkKind::Nic))
        {
            continue;
        }
        LinkUse u;
        u.link = l;
        u.name = vertices[links[l].from].name + "->" + vertices[links[l].to].name;
        u.gbps = links[l].bitsPerSec / 1e9;
        u.bytes.assign(m_jobs.size(), 0.0);
        for (uint32_t k = 0; k < m_jobs.size(); ++k)
        {
            if (!m_jobs[k].workload)
            {
                continue;
            }
            const uint32_t owner = m_jobs[k].workload->GetNcclWorld()->GetOwner();
            if (owner < byOwner.size() && l < byOwner[owner].size())
            {
                u.bytes[k] = byOwner[owner][l];
            }
        }
        u.background.assign(bgOwners.size(), 0.0);
        for (size_t g = 0; g < bgOwners.size(); ++g)
        {
            if (bgOwners[g] < byOwner.size() && l < byOwner[bgOwners[g]].size())
            {
                u.background[g] = byOwner[bgOwners[g]][l];
            }
        }
        out.push_back(u);
    }
    return out;
}

std::string
MultiJobHelper::ReportJson(Ptr<NetworkBackend> backend) const
{
    const std::vector<JobReport> reports = Reports();
    const std::vector<LinkUse> use = FabricUse(backend);
    std::vector<uint64_t> fabricBytes(reports.size(), 0);
    for (const LinkUse& u : use)
    {
        if (m_topology->Links()[u.link].kind != TopoLinkKind::Fabric)
        {
            continue;
        }
        for (size_t k = 0; k < u.bytes.size(); ++k)
        {
            fabricBytes[k] += static_cast<uint64_t>(u.bytes[k]);
        }
    }
    gpusim::JsonWriter w;
    w.BeginObject().Key("jobs").BeginArray();
    for (size_t k = 0; k < reports.size(); ++k)
    {
        const JobReport& r = reports[k];
        w.BeginObject().Key("name").String(r.name).Key("placement").String(r.placement);
        w.Key("gpus").BeginArray();
        for (uint32_t g : r.gpus)
        {
            w.Uint(g);
        }
        w.EndArray();
        w.Key("start_us").Double(r.start.GetNanoSeconds() / 1e3);
        w.Key("completed").Bool(r.run.completed);
        w.Key("end_us").Double(r.run.endTime.GetNanoSeconds() / 1e3);
        w.Key("collectives").Uint(r.collectives);
        w.Key("fabric_bytes").Uint(fabricBytes[k]);
        w.Key("iterations").BeginArray();
        for (const JobIteration& it : r.iterations)
        {
            w.BeginObject().Key("name").String(it.name);
            w.Key("start_us").Double(it.start.GetNanoSeconds() / 1e3);
            w.Key("time_us").Double((it.end - it.start).GetNanoSeconds() / 1e3);
            w.Key("exposed_comm_us").Double(it.exposedCommUs);
            w.EndObject();
        }
        w.EndArray();
        w.Key("errors").BeginArray();
        for (const std::string& e : r.run.errors)
        {
            w.String(e);
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
    // Background generators: flow completion times and the fabric bytes they carried.
    std::vector<gpusim::BackgroundSummary> bgs;
    for (const Ptr<BackgroundTraffic>& bg : m_background)
    {
        const auto s = bg->Summaries();
        bgs.insert(bgs.end(), s.begin(), s.end());
    }
    std::vector<uint64_t> bgFabricBytes(bgs.size(), 0);
    for (const LinkUse& u : use)
    {
        for (size_t g = 0; g < u.background.size() && g < bgs.size(); ++g)
        {
            if (m_topology->Links()[u.link].kind == TopoLinkKind::Fabric)
            {
                bgFabricBytes[g] += static_cast<uint64_t>(u.background[g]);
            }
        }
    }
    if (!bgs.empty())
    {
        w.Key("background").BeginArray();
        for (size_t g = 0; g < bgs.size(); ++g)
        {
            w.BeginObject();
            gpusim::WriteSummaryFields(w, bgs[g]);
            w.Key("fabric_bytes").Uint(bgFabricBytes[g]).EndObject();
        }
        w.EndArray();
    }
    w.Key("links").BeginArray();
    for (const LinkUse& u : use)
    {
        w.BeginObject().Key("link").String(u.name).Key("gbps").Double(u.gbps);
        w.Key("jobs").Uint(u.Jobs()).Key("bytes").BeginObject();
        for (size_t k = 0; k < u.bytes.size(); ++k)
        {
            if (u.bytes[k] > 0)
            {
                w.Key(reports[k].name).Double(u.bytes[k]);
            }
        }
        w.EndObject();
        if (!bgs.empty())
        {
            w.Key("background").BeginObject();
            for (size_t g = 0; g < u.background.size() && g < bgs.size(); ++g)
            {
                if (u.background[g] > 0)
                {
                    w.Key(bgs[g].name).Double(u.background[g]);
                }
            }
            w.EndObject();
        }
        w.EndObject();
    }
    w.EndArray().EndObject();
    return w.Take();
}

} // namespace ns3
