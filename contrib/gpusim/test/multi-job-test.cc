// Several jobs on one fabric (MultiJobHelper, JobPlacement): placement policies and their
// errors, two jobs that share spine uplinks slowing each other by the link shares, jobs on
// disjoint leaves not at all, start offsets, and the per-job fabric report.
//
// The cluster: 4 single-GPU servers, one 100 Gb/s NIC each, 2 NICs per leaf, oversubscription
// 2 -> 2 leaves (servers 0, 1 on leaf 0; 2, 3 on leaf 1) and 1 spine with one 100 Gb/s link
// per leaf. A GPU pair across the leaves crosses leaf0->spine->leaf1 (or back).
#include "flow-test-topology.h"
#include "ns3/cluster-spec.h"
#include "ns3/fabric-event.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/gpusim-commands.h"
#include "ns3/job-builder.h"
#include "ns3/multi-job-helper.h"
#include "ns3/op-feed.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/config.h"
#include "ns3/nstime.h"

#include "cli-test-util.h"
#include "test-temp-dir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <map>

using namespace ns3;
using gpusim::CollKind;

namespace
{

gpusim::ClusterSpec
TwoLeaves()
{
    return gpusim_test::TwoLeavesSpec();
}

/// A 2-rank job: `iters` AllReduces of `bytes`, each an iteration.
std::shared_ptr<const gpusim::JobTrace>
AllReduceJob(uint64_t bytes, uint32_t iters = 1)
{
    JobBuilder b(2);
    b.AllRanks().CommInit("world");
    for (uint32_t i = 0; i < iters; ++i)
    {
        const std::string it = "iteration#" + std::to_string(i);
        b.Marker(it, gpusim::MarkerPhase::Begin).AllReduce(0, "world", bytes).SyncDevice();
        b.Marker(it, gpusim::MarkerPhase::End);
    }
    return b.BuildShared();
}

struct JobSpec
{
    std::string name;
    std::string placement;
    Time start;
};

struct Result
{
    std::vector<JobReport> jobs;
    std::vector<MultiJobHelper::LinkUse> links;
    uint64_t conflicts = 0; //!< shortcuts that met the other job's traffic, all jobs
};

/// Runs the jobs `addJobs` adds on a cluster of `spec` (flow backend, `fidelity`).
Result
RunScenario(const gpusim::ClusterSpec& spec,
            const std::function<void(MultiJobHelper&)>& addJobs,
            const std::string& fidelity = "chunk")
{
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    MultiJobHelper jobs(gpus, cluster.GetTopology());
    addJobs(jobs);
    GpuWorkloadHelper helper;
    helper.SetBackend(net);
    helper.SetNcclAttribute("Fidelity", StringValue(fidelity));
    jobs.Install(helper);
    Simulator::Run();
    Result r;
    r.jobs = jobs.Reports();
    r.links = jobs.FabricUse(net);
    for (uint32_t k = 0; k < jobs.GetNJobs(); ++k)
    {
        r.conflicts += jobs.GetWorkload(k)->GetNcclWorld()->GetFidelityStats().conflicts;
        jobs.GetWorkload(k)->Dispose();
    }
    Simulator::Destroy();
    return r;
}

/// The AllReduce jobs of `specs` (`iters` of `bytes` each) on the two-leaf cluster.
Result
RunJobs(const std::vector<JobSpec>& specs,
        uint64_t bytes,
        uint32_t iters = 1,
        const std::string& fidelity = "chunk")
{
    return RunScenario(
        TwoLeaves(),
        [&](MultiJobHelper& jobs) {
            for (const JobSpec& s : specs)
            {
                jobs.AddJob(s.name, AllReduceJob(bytes, iters), JobPlacement::Parse(s.placement),
                            s.start);
            }
        },
        fidelity);
}

Time
Span(const JobReport& r, size_t it = 0)
{
    return r.iterations.at(it).end - r.iterations.at(it).start;
}

} // namespace

TEST(JobPlacement, PoliciesHandOutWholeServersInTheirOrder)
{
    GpuClusterHelper cluster;
    auto spec = TwoLeaves();
    spec.gpusPerServer = 2;
    spec.nicsPerServer = 1;
    cluster.SetSpec(spec);
    cluster.Create();
    const ClusterTopology& topo = *cluster.GetTopology();
    EXPECT_EQ(ServerLeafGroups(topo), (std::vector<uint32_t>{0, 0, 1, 1}));
    std::vector<std::string> owner;
    // packed: servers 0, 1 (leaf 0); spread: servers 0, 2, 1, 3 round-robin over the leaves.
    EXPECT_EQ(PlaceJob(topo, "a", 3, JobPlacement::Parse("packed"), owner),
              (std::vector<uint32_t>{0, 1, 2}));
    EXPECT_EQ(PlaceJob(topo, "b", 3, JobPlacement::Parse("spread"), owner),
              (std::vector<uint32_t>{4, 5, 3})); // server 0 is full: 2 (GPUs 4, 5), then 1
    owner.clear();
    EXPECT_EQ(PlaceJob(topo, "b", 4, JobPlacement::Parse("spread"), owner),
              (std::vector<uint32_t>{0, 1, 4, 5}));
    owner.clear();
    const auto r1 = PlaceJob(topo, "r", 8, JobPlacement::Parse("random:7"), owner);
    owner.clear();
    EXPECT_EQ(PlaceJob(topo, "r", 8, JobPlacement::Parse("random:7"), owner), r1); // seeded
    owner.clear();
    const auto r2 = PlaceJob(topo, "r", 8, JobPlacement::Parse("random:8"), owner);
    EXPECT_NE(r1, r2);
    for (size_t i = 0; i < 8; i += 2)
    {
        EXPECT_EQ(r1[i] / 2, r1[i + 1] / 2); // whole servers
    }
    owner.clear();
    EXPECT_EQ(PlaceJob(topo, "x", 3, JobPlacement::Parse("7,0-1"), owner),
              (std::vector<uint32_t>{7, 0, 1}));
    EXPECT_EQ(JobPlacement::Parse("7,0-1").ToString(), "7,0,1");
}

TEST(JobPlacement, BadPlacementsNameTheJobAndTheGpu)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(TwoLeaves());
    cluster.Create();
    const ClusterTopology& topo = *cluster.GetTopology();
    auto fails = [&topo](std::vector<std::string>& owner, const std::string& placement,
                         uint32_t ranks, const std::string& what) {
        try
        {
            PlaceJob(topo, "late", ranks, JobPlacement::Parse(placement), owner);
            ADD_FAILURE() << placement << ": no error";
        }
        catch (const std::exception& e)
        {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        }
    };
    std::vector<std::string> owner;
    PlaceJob(topo, "first", 2, JobPlacement::Parse("packed"), owner);
    fails(owner, "2,9", 2, "job 'late': GPU 9 does not exist (the cluster has 4 GPUs, 0-3)");
    fails(owner, "2,1", 2, "job 'late': GPU 1 is already used by job 'first'");
    fails(owner, "2,2", 2, "job 'late': GPU 2 is listed twice");
    fails(owner, "2", 2, "job 'late': placed on 1 GPUs but it has 2 ranks");
    fails(owner, "packed", 3, "job 'late': needs 3 GPUs but only 2 of the cluster's 4 are free");
    fails(owner, "3-2", 2, "range '3-2' runs backwards");
    fails(owner, "packd", 2, "'packd' is not a GPU number");
    fails(owner, "random:x", 2, "'x' is not a seed");
    // Errors lose nothing: the first job's GPUs are still its own, the others free.
    EXPECT_EQ(owner, (std::vector<std::string>{"first", "first", "", ""}));
}

TEST(MultiJob, JobsSharingTheSpineUplinksSlowEachOtherByTheLinkShare)
{
    // Each job is a 2-rank AllReduce of 256 MiB between leaves: alone, its flows in each
    // direction have a leaf<->spine link (100 Gb/s, as the NIC) to themselves. Together, job
    // a (GPUs 0, 2) and job b (GPUs 1, 3) put one flow each on leaf0->spine and on
    // leaf1->spine: max-min gives each half the link, so the bandwidth-bound time doubles
    // (latency terms, tens of us of ~43 ms, do not; ratio within [1.99, 2.0]).
    const uint64_t S = 256ull << 20;
    const Result alone = RunJobs({{"a", "0,2", Seconds(0)}}, S);
    ASSERT_TRUE(alone.jobs[0].run.completed);
    const Result shared = RunJobs({{"a", "0,2", Seconds(0)}, {"b", "1,3", Seconds(0)}}, S);
    ASSERT_TRUE(shared.jobs[0].run.completed && shared.jobs[1].run.completed);
    const double ta = Span(alone.jobs[0]).GetSeconds();
    for (const JobReport& j : shared.jobs)
    {
        const double ratio = Span(j).GetSeconds() / ta;
        std::printf("job %s: %.1f us alone, %.1f us sharing the spine uplinks: x %.4f\n",
                    j.name.c_str(), ta * 1e6, Span(j).GetSeconds() * 1e6, ratio);
        EXPECT_GT(ratio, 1.99) << j.name;
        EXPECT_LE(ratio, 2.0) << j.name;
    }
    EXPECT_EQ(Span(shared.jobs[0]), Span(shared.jobs[1])); // symmetric
    // The fabric report: both uplinks carried both jobs, the same bytes each.
    uint32_t sharedLinks = 0;
    for (const auto& u : shared.links)
    {
        if (u.name.find("spine") != std::string::npos)
        {
            EXPECT_EQ(u.Jobs(), 2u) << u.name;
            EXPECT_EQ(u.bytes[0], u.bytes[1]) << u.name;
            ++sharedLinks;
        }
    }
    EXPECT_EQ(sharedLinks, 4u); // leaf0->spine, spine->leaf1, leaf1->spine, spine->leaf0
}

TEST(MultiJob, JobsOnDisjointLeavesDoNotSlowEachOther)
{
    // Job a on leaf 0 (GPUs 0, 1), job b on leaf 1 (GPUs 2, 3): no link in common, so each
    // takes exactly what it takes alone, to the nanosecond.
    const uint64_t S = 64ull << 20;
    const Result aAlone = RunJobs({{"a", "0,1", Seconds(0)}}, S, 2);
    const Result bAlone = RunJobs({{"b", "2,3", Seconds(0)}}, S, 2);
    const Result both = RunJobs({{"a", "0,1", Seconds(0)}, {"b", "2,3", Seconds(0)}}, S, 2);
    ASSERT_EQ(both.jobs.size(), 2u);
    for (size_t it = 0; it < 2; ++it)
    {
        EXPECT_EQ(Span(both.jobs[0], it), Span(aAlone.jobs[0], it));
        EXPECT_EQ(Span(both.jobs[1], it), Span(bAlone.jobs[0], it));
    }
    EXPECT_EQ(both.jobs[0].run.endTime, aAlone.jobs[0].run.endTime);
    for (const auto& u : both.links)
    {
        EXPECT_LE(u.Jobs(), 1u) << u.name;
        EXPECT_EQ(u.name.find("spine"), std::string::npos) << u.name; // leaves only
    }
}

TEST(MultiJob, AJobStartingAfterTheOtherEndsRunsAsIfAlone)
{
    // b starts when a (same GPUs pairs across the spine as above) has finished: no overlap,
    // so both take the time of a job alone, and b's iteration starts at its offset.
    const uint64_t S = 64ull << 20;
    const Result alone = RunJobs({{"a", "0,2", Seconds(0)}}, S);
    const Time ta = alone.jobs[0].run.endTime;
    const Result later = RunJobs({{"a", "0,2", Seconds(0)}, {"b", "1,3", ta}}, S);
    EXPECT_EQ(Span(later.jobs[0]), Span(alone.jobs[0]));
    EXPECT_EQ(Span(later.jobs[1]), Span(alone.jobs[0]));
    EXPECT_EQ(later.jobs[1].iterations[0].start, ta);
    EXPECT_EQ(later.jobs[1].run.endTime, ta + alone.jobs[0].run.endTime);
    // Started half-way through a's run instead, b slows a down.
    const Result overlap = RunJobs({{"a", "0,2", Seconds(0)}, {"b", "1,3", ta / 2}}, S);
    EXPECT_GT(Span(overlap.jobs[0]), Span(alone.jobs[0]));
}

TEST(MultiJob, DuplicateNamesAndNegativeStartsAreRejected)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(TwoLeaves());
    NodeContainer gpus = cluster.Create();
    MultiJobHelper jobs(gpus, cluster.GetTopology());
    jobs.AddJob("a", AllReduceJob(1 << 20), JobPlacement::Parse("packed"));
    EXPECT_THROW(jobs.AddJob("a", AllReduceJob(1 << 20), JobPlacement::Parse("packed")),
                 std::runtime_error);
    EXPECT_THROW(jobs.AddJob("b", AllReduceJob(1 << 20), JobPlacement::Parse("packed"),
                             MicroSeconds(-1)),
                 std::runtime_error);
    EXPECT_EQ(jobs.GetNJobs(), 1u);
    EXPECT_EQ(jobs.AddJob("b", AllReduceJob(1 << 20), JobPlacement::Parse("packed")), 1u);
    EXPECT_EQ(jobs.GetGpus(1), (std::vector<uint32_t>{2, 3}));
}

TEST(MultiJob, ShortcutsNoticeTheOtherJobsTraffic)
{
    // Fidelity auto (a collective runs as edge flows or replays when alone on its links)
    // against chunk level, 4 iterations each of two jobs; b starts half-way through a's second
    // iteration. The shortcuts see the other job's flows through the shared backend: a's edge
    // flows count b's arrival as a conflict and run chunk by chunk from then on. Contention
    // that starts in the middle of a collective is what no shortcut can price exactly: a's
    // second iteration and b's first are 0.56 % short (measured 12.0 us of 2141.2), every
    // other iteration is exact. That is why `gpusim jobs` runs chunk level by default.
    const uint64_t S = 16ull << 20;
    const Result alone = RunJobs({{"a", "0,2", Seconds(0)}}, S, 1, "chunk");
    const Time offset = alone.jobs[0].run.endTime * 3 / 2;
    const std::vector<JobSpec> specs = {{"a", "0,2", Seconds(0)}, {"b", "1,3", offset}};
    const Result chunk = RunJobs(specs, S, 4, "chunk");
    const Result autoFid = RunJobs(specs, S, 4, "auto");
    EXPECT_EQ(chunk.conflicts, 0u);
    EXPECT_GE(autoFid.conflicts, 1u);
    bool slowed = false;
    uint32_t exact = 0;
    for (size_t k = 0; k < 2; ++k)
    {
        for (size_t it = 0; it < 4; ++it)
        {
            const double c = Span(chunk.jobs[k], it).GetSeconds();
            const double a = Span(autoFid.jobs[k], it).GetSeconds();
            std::printf("job %zu iteration %zu: chunk %.2f us, auto %.2f us\n", k, it, c * 1e6,
                        a * 1e6);
            EXPECT_NEAR(a, c, 0.01 * c) << "job " << k << " iteration " << it;
            exact += a == c;
            slowed = slowed || c > 1.2 * Span(alone.jobs[0]).GetSeconds();
        }
    }
    EXPECT_GE(exact, 6u);
    EXPECT_TRUE(slowed); // the jobs did meet
}

namespace
{

const char* kTwoLeavesYaml = "servers: 4\ngpus_per_server: 1\nnics_per_server: 1\nnic_gbps: 100\n"
                             "fabric: leaf-spine\nnics_per_leaf: 2\noversubscription: 2\n";

/// Writes `text` as DIR/NAME and returns the path.
std::string
WriteFile(const TestTempDir& dir, const std::string& name, const std::string& text)
{
    const std::string path = dir.Path() + "/" + name;
    std::ofstream(path) << text;
    return path;
}

int
RunJobsCli(const std::string& scenario, std::string& out, std::string& err)
{
    const CliResult r = Cli({"jobs", scenario});
    out = r.out;
    err = r.err;
    return r.code;
}

} // namespace

TEST(MultiJob, CliRunsAScenarioFileAndReportsSharedLinks)
{
    // The YAML form of JobsSharingTheSpineUplinksSlowEachOtherByTheLinkShare: the same two
    // 2-rank AllReduces of 256 MiB on GPUs 0, 2 and 1, 3 give the same 45320.2 us each (the
    // command runs chunk level by default), and the fabric line names the 4 shared links.
    TestTempDir tmp("multi-job-cli");
    WriteFile(tmp, "cluster.yaml", kTwoLeavesYaml);
    const std::string job = "    collective: allreduce\n    bytes: 256M\n    ranks: 2\n";
    const std::string scenario =
        WriteFile(tmp, "s.yaml",
                  "cluster: cluster.yaml\njobs:\n  - name: a\n" + job +
                      "    placement: 0,2\n  - name: b\n" + job + "    placement: 1,3\n");
    std::string out, err;
    ASSERT_EQ(RunJobsCli(scenario, out, err), 0) << err;
    EXPECT_NE(out.find("# cluster: 4 servers x 1 GPUs"), std::string::npos) << out;
    EXPECT_NE(out.find("\na                     2  0,2                0.0           1       "
                       "45320.2"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("\nb                     2  1,3"), std::string::npos) << out;
    EXPECT_NE(out.find("4 of them for more than one job; the busiest shared: "),
              std::string::npos)
        << out;
    // The packet backend splits its links' bytes by job too (owner tags on the transports'
    // data, counted at each egress queue): with 16 MiB AllReduces, both jobs on the 4 spine
    // links with the same IP bytes (headers included, so above the flow backend's 16.84 MiB
    // of wire bytes and within 3 % of them).
    const std::string small = "    collective: allreduce\n    bytes: 16M\n    ranks: 2\n";
    const std::string smallScenario =
        WriteFile(tmp, "small.yaml",
                  "cluster: cluster.yaml\njobs:\n  - name: a\n" + small +
                      "    placement: 0,2\n  - name: b\n" + small + "    placement: 1,3\n");
    for (const char* transport : {"tcp", "rdma"})
    {
        const CliResult p =
            Cli({"jobs", smallScenario, "--backend", "packet", "--transport", transport});
        ASSERT_EQ(p.code, 0) << p.err;
        const size_t at = p.out.find("4 of them for more than one job; the busiest shared: ");
        ASSERT_NE(at, std::string::npos) << p.out;
        double mibA = 0;
        double mibB = 0;
        const size_t open = p.out.find("(a ", at);
        ASSERT_EQ(std::sscanf(p.out.c_str() + open, "(a %lf MiB, b %lf MiB)", &mibA, &mibB), 2)
            << p.out.substr(at, 120);
        EXPECT_EQ(mibA, mibB) << transport;
        EXPECT_GT(mibA, 16.84) << transport;
        EXPECT_LT(mibA, 16.84 * 1.03) << transport;
    }
    // With a checkpoint-style bulk flow from GPU 0 across the spine as background traffic, its
    // completion time is reported and job a (which shares GPU 0's NIC with it) is slower.
    const std::string withBg = WriteFile(
        tmp, "bg.yaml",
        "cluster: cluster.yaml\njobs:\n  - name: a\n" + job +
            "    placement: 0,2\nbackground:\n  - bulk:src=0,dst=3,bytes=64M,name=ckpt\n");
    ASSERT_EQ(RunJobsCli(withBg, out, err), 0) << err;
    EXPECT_NE(out.find("#  ckpt                  1      1       67108864"), std::string::npos)
        << out;
    EXPECT_EQ(out.find("\na                     2  0,2                0.0           1       "
                       "22715.1"),
              std::string::npos)
        << out; // not its time alone
}

TEST(MultiJob, CliErrorsNameTheFileLineAndJob)
{
    TestTempDir tmp("multi-job-cli-bad");
    WriteFile(tmp, "cluster.yaml", kTwoLeavesYaml);
    const std::string job = "    collective: allreduce\n    bytes: 1M\n    ranks: 2\n";
    struct Case
    {
        std::string scenario;
        int code;
        std::string error;
    } cases[] = {
        {"jobs:\n  - name: a\n" + job + "    placment: packed\n", 2,
         "s.yaml:7:5: unknown key 'placment' in a job"},
        {"jobs:\n  - name: a\n" + job + "    placement: 0,9\n", 2,
         "job 'a': GPU 9 does not exist (the cluster has 4 GPUs, 0-3)"},
        {"jobs:\n  - name: a\n" + job + "    placement: 0,1\n  - name: b\n" + job +
             "    placement: 1,2\n",
         2, "job 'b': GPU 1 is already used by job 'a'"},
        {"jobs:\n  - name: a\n" + job + "  - name: a\n" + job, 2,
         "job 'a': the name is used twice"},
        {"jobs:\n  - name: a\n" + job + "    start: 5 ms\n", 2, "job 'a': start: bad time"},
        {"jobs:\n  - name: a\n    collective: allreduce\n    ranks: 2\n", 2,
         "a collective job needs 'bytes' and 'ranks'"},
        {"jobs:\n  - name: a\n" + job + "    trace: x\n", 2,
         "job 'a': give exactly one of trace, generate, collective"},
        {"jobs: []\n", 2, "key 'jobs': a list of at least one job"},
    };
    for (const Case& c : cases)
    {
        const std::string scenario =
            WriteFile(tmp, "s.yaml", "cluster: cluster.yaml\n" + c.scenario);
        std::string out, err;
        EXPECT_EQ(RunJobsCli(scenario, out, err), c.code) << c.scenario;
        EXPECT_NE(err.find(c.error), std::string::npos) << c.scenario << "\n" << err;
    }
}

TEST(MultiJob, AJobThatLosesItsPathFailsAloneAndTheOtherFinishes)
{
    // GPU 0's NIC fails for good just after the start: job a (GPUs 0, 2) has no path left and,
    // after the transport timeout (1 ms here), fails with NCCL's error; job b (GPUs 1, 3) has
    // its own NICs and finishes, in the time it takes alone (a's flows wait off the links).
    Config::SetDefault("ns3::NetworkBackend::TransportTimeout", TimeValue(MilliSeconds(1)));
    auto spec = TwoLeaves();
    spec.fabricEvents = gpusim::ParseLinkDown("s0/nic0@1us");
    const uint64_t S = 64ull << 20;
    const std::vector<JobReport> r = RunScenario(spec, [&](MultiJobHelper& jobs) {
                                         jobs.AddJob("a", AllReduceJob(S), JobPlacement::Parse("0,2"));
                                         jobs.AddJob("b", AllReduceJob(S), JobPlacement::Parse("1,3"));
                                     }).jobs;
    Config::SetDefault("ns3::NetworkBackend::TransportTimeout",
                       TimeValue(MicroSeconds(4.096 * 1048576 * 8)));
    EXPECT_FALSE(r[0].run.completed);
    ASSERT_EQ(r[0].run.errors.size(), 1u);
    EXPECT_NE(r[0].run.errors[0].find("ncclRemoteError at 1011 us"), std::string::npos)
        << r[0].run.errors[0];
    EXPECT_TRUE(r[1].run.completed) << r[1].run.stuck;
    EXPECT_TRUE(r[1].run.errors.empty());
    const Result alone = RunJobs({{"b", "1,3", Seconds(0)}}, S);
    EXPECT_LT(Span(r[1]).GetSeconds(), 1.001 * Span(alone.jobs[0]).GetSeconds());
}

TEST(MultiJob, AJobFedWhileItRunsSharesTheFabricLikeAnyOther)
{
    // Live jobs arrive as an OpFeed (LiveJobSource; here a TraceOpFeed replaying the same ops,
    // as a live run's recording replays). Next to a trace job on the shared spine uplinks it
    // slows and is slowed exactly as the two trace jobs of
    // JobsSharingTheSpineUplinksSlowEachOtherByTheLinkShare (45320.2 us each).
    const uint64_t S = 256ull << 20;
    const Result traces = RunJobs({{"a", "0,2", Seconds(0)}, {"b", "1,3", Seconds(0)}}, S);
    Ptr<TraceOpFeed> feed = CreateObject<TraceOpFeed>();
    feed->SetJob(*AllReduceJob(S));
    const std::vector<JobReport> r = RunScenario(TwoLeaves(), [&](MultiJobHelper& jobs) {
                                         jobs.AddJob("a", feed, JobPlacement::Parse("0,2"));
                                         jobs.AddJob("b", AllReduceJob(S), JobPlacement::Parse("1,3"));
                                     }).jobs;
    ASSERT_TRUE(r[0].run.completed) << r[0].run.stuck;
    ASSERT_TRUE(r[1].run.completed) << r[1].run.stuck;
    EXPECT_EQ(r[0].gpus, (std::vector<uint32_t>{0, 2}));
    std::printf("fed job %.1f us, trace job %.1f us (both traces: %.1f us)\n",
                Span(r[0]).GetSeconds() * 1e6, Span(r[1]).GetSeconds() * 1e6,
                Span(traces.jobs[0]).GetSeconds() * 1e6);
    EXPECT_EQ(Span(r[0]), Span(traces.jobs[0]));
    EXPECT_EQ(Span(r[1]), Span(traces.jobs[1]));
}
