#include "ns3/gpusim-commands.h"
#include "ns3/boolean.h"

#include "ns3/chakra-command.h"
#include "ns3/cli-options.h"
#include "ns3/cluster-spec.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/flow-backend.h"
#include "ns3/generate-command.h"
#include "ns3/search-command.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/jobs-command.h"
#include "ns3/json-writer.h"
#include "ns3/packet-backend.h"
#include "ns3/replay-command.h"
#include "ns3/record-command.h"
#include "ns3/simai-command.h"
#include "ns3/simai-workload.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/boolean.h"
#include "ns3/rdma-transport.h"
#include "ns3/tcp-transport.h"
#include "ns3/uinteger.h"
#include "ns3/validate-command.h"
#include "ns3/validate-training-command.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

namespace ns3
{
namespace gpusim
{

const std::set<std::string> kNcclOptions = {"algo", "proto", "channels", "efficiency", "backend",
                                            "chunk-bytes", "cc", "queue", "mtu", "buffer",
                                            "sample-us", "fidelity", "transport", "pfc",
                                            "rdma-reorder", "flowlet-gap-us", "ring-net-slots",
                                            "ll-ring-net-slots",
                                            "tree-net-slots", "trees-on-all-nics",
                                            "p2p-copy-out"};

std::string
DistributedLine(Ptr<NetworkBackend> backend)
{
    Ptr<PacketBackend> packet = DynamicCast<PacketBackend>(backend);
    const std::string d = packet ? packet->GetPartitionDescription() : "";
    return d.empty() ? "" : "# distributed: " + d + "\n";
}

Ptr<NetworkBackend>
MakeBackend(const Options& o, Ptr<ClusterTopology> topo)
{
    const std::string name = o.Get("backend", "flow");
    if (name == "packet")
    {
        // Unknown --cc / --queue names throw std::invalid_argument listing the known ones.
        Ptr<PacketBackend> b = CreateObject<PacketBackend>();
        const std::string transport = o.Get("transport", "tcp");
        if (transport == "rdma")
        {
            Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
            rdma->SetCongestionControl(o.Get("cc", "dcqcn"));
            const std::string reorder = o.Get("rdma-reorder", "gbn");
            if (reorder != "gbn" && reorder != "tolerant")
            {
                throw UsageError("--rdma-reorder must be gbn or tolerant");
            }
            rdma->SetAttribute("ReorderMode", EnumValue(reorder == "tolerant"
                                                            ? RdmaTransport::TOLERANT
                                                            : RdmaTransport::GO_BACK_N));
            b->SetTransport(rdma);
        }
        else if (transport == "tcp")
        {
            if (o.Has("rdma-reorder"))
            {
                throw UsageError("--rdma-reorder needs --transport rdma");
            }
            Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
            tcp->SetCongestionControl(o.Get("cc", "dctcp"));
            b->SetTransport(tcp);
        }
        else
        {
            throw UsageError("--transport must be tcp or rdma");
        }
        b->SetAttribute("QueueDisc",
                        StringValue(o.Get("queue", transport == "rdma" ? "ecn" : "red-ecn")));
        b->SetAttribute("Mtu", UintegerValue(o.Count("mtu", 9000)));
        if (o.Has("buffer"))
        {
            b->SetAttribute("BufferBytes", UintegerValue(ParseBytes(o.Get("buffer", ""))));
        }
        const std::string pfc = o.Get("pfc", "off");
        if (pfc != "on" && pfc != "off")
        {
            throw UsageError("--pfc must be on or off");
        }
        b->SetAttribute("Pfc", BooleanValue(pfc == "on")); // Build() checks --queue ecn
        if (o.Has("flowlet-gap-us"))
        {
            const double us = o.Number("flowlet-gap-us", 0);
            if (!(us > 0))
            {
                throw UsageError("--flowlet-gap-us must be > 0");
            }
            b->SetAttribute("FlowletGap", TimeValue(NanoSeconds(std::llround(us * 1e3))));
        }
        if (o.Has("sample-us"))
        {
            const double us = o.Number("sample-us", 0);
            if (us <= 0)
            {
                throw UsageError("--sample-us must be > 0");
            }
            b->SetAttribute("SampleInterval", TimeValue(NanoSeconds(std::llround(us * 1e3))));
        }
        b->SetTopology(topo);
        b->Build(); // report bad settings before anything runs
        return b;
    }
    if (name != "flow")
    {
        throw std::invalid_argument("unknown backend '" + name + "' (known: flow, packet)");
    }
    for (const char* k : {"cc", "queue", "mtu", "buffer", "sample-us", "net-csv", "transport",
                          "pfc", "rdma-reorder", "flowlet-gap-us"})
    {
        if (o.Has(k))
        {
            throw UsageError(std::string("--") + k + " needs --backend packet");
        }
    }
    Ptr<FlowBackend> b = CreateObject<FlowBackend>();
    b->SetTopology(topo);
    return b;
}

bool
MirroredRanksOption(const Options& o, const std::string& defaultRanks)
{
    const std::string ranks = o.Get("ranks", defaultRanks);
    if (ranks != "all" && ranks != "mirrored" && ranks != "lockstep")
    {
        throw UsageError("--ranks must be all, mirrored or lockstep");
    }
    return ranks != "all";
}

std::string
FidelityOption(const Options& o, const std::string& defaultFidelity)
{
    const std::string fidelity = o.Get("fidelity", defaultFidelity);
    if (fidelity != "auto" && fidelity != "chunk" && fidelity != "collective" &&
        fidelity != "flows")
    {
        throw UsageError("--fidelity must be auto, chunk, collective or flows");
    }
    return fidelity;
}

std::string
FidelityReportLine(const std::string& fidelity, const NcclWorld::FidelityStats& s)
{
    std::ostringstream line;
    line << "# fidelity: " << fidelity;
    if (fidelity == "chunk")
    {
        line << ": every collective chunk by chunk (the detailed model)\n";
        return line.str();
    }
    const uint64_t chunk = s.ChunkTotal();
    auto plural = [](uint64_t n) { return n == 1 ? " collective" : " collectives"; };
    line << ": " << s.fluid << plural(s.fluid)
         << (fidelity == "auto" ? " as edge flows" : " as edge flows or trial loops") << ", ";
    if (s.oneRail > 0)
    {
        line << s.oneRail << " by one rail (NVLS/NVLSTree), ";
    }
    line << s.replayed << " replayed, " << chunk << " chunk by chunk";
    if (chunk > 0)
    {
        line << " (";
        const char* sep = "";
        for (size_t i = 0; i < s.chunk.size(); ++i)
        {
            if (s.chunk[i] > 0)
            {
                line << sep << s.chunk[i] << " " << Describe(static_cast<ChunkReason>(i));
                sep = "; ";
            }
        }
        line << ")";
    }
    if (s.conflicts > 0)
    {
        line << ", " << s.conflicts << " conflicts";
    }
    if (fidelity == "auto")
    {
        line << "; shortcuts only where exact (within 0.1 % of --fidelity chunk)";
    }
    line << "\n";
    return line.str();
}

std::string
FidelityJson(const std::string& fidelity, const NcclWorld::FidelityStats& s)
{
    return s.Json(fidelity);
}

void
WarnFidelityConflicts(const NcclWorld::FidelityStats& s, std::ostream& err)
{
    if (s.conflicts > 0)
    {
        err << "gpusim: warning: " << s.conflicts
            << " replayed or edge-flow collective(s) shared links with traffic that started "
               "after them (their times may be off); those ops ran chunk by chunk afterwards "
               "(--fidelity chunk is exact)\n";
    }
}

void
ConfigureRanks(const Options& o, GpuWorkloadHelper& h, const std::string& defaultRanks)
{
    // lockstep: mirrored with one class per op list (GpuWorkload MirrorSplitClasses off), the
    // fastest; exact only where the replicas see the same network (doc/flow-backend.md).
    const bool lockstep = o.Get("ranks", defaultRanks) == "lockstep";
    h.SetWorkloadAttribute("MirrorIdenticalRanks",
                           BooleanValue(lockstep || MirroredRanksOption(o, defaultRanks)));
    h.SetWorkloadAttribute("MirrorSplitClasses", BooleanValue(!lockstep));
}

void
ConfigureNccl(const Options& o, GpuWorkloadHelper& h, const std::string& defaultFidelity)
{
    const std::string algo = o.Get("algo", "auto");
    if (algo != "auto" && algo != "ring" && algo != "tree" && algo != "nvls" &&
        algo != "nvlstree")
    {
        throw UsageError("--algo must be ring, tree, nvls, nvlstree or auto");
    }
    const std::string proto = o.Get("proto", "auto");
    if (proto != "auto" && proto != "simple" && proto != "ll128" && proto != "ll")
    {
        throw UsageError("--proto must be simple, ll128, ll or auto");
    }
    const double eff = o.Number("efficiency", 0);
    if (o.Has("efficiency") && (eff <= 0 || eff > 1))
    {
        throw UsageError("--efficiency must be in (0, 1]");
    }
    h.SetNcclAttribute("Algorithm", StringValue(algo));
    h.SetNcclAttribute("Protocol", StringValue(proto));
    h.SetNcclAttribute("Efficiency", DoubleValue(eff));
    h.SetNcclAttribute("Channels", UintegerValue(o.Count("channels", 0)));
    const std::string fidelity = FidelityOption(o, defaultFidelity);
    // flows: collective plus ring collectives as one flow per ring edge (RingFlows). auto:
    // the model picks the exact shortcut per collective (NcclWorld Fidelity=auto).
    h.SetNcclAttribute("Fidelity", StringValue(fidelity == "flows" ? "collective" : fidelity));
    h.SetNcclAttribute("RingFlows", BooleanValue(fidelity == "flows"));
    if (o.Has("ring-net-slots"))
    {
        const uint32_t slots = o.Count("ring-net-slots", 1);
        if (slots < 1 || slots > 64)
        {
            throw UsageError("--ring-net-slots must be 1 to 64");
        }
        h.SetNcclAttribute("RingNetSlots", UintegerValue(slots));
    }
    if (o.Has("ll-ring-net-slots"))
    {
        const uint32_t slots = o.Count("ll-ring-net-slots", 1);
        if (slots < 1 || slots > 64)
        {
            throw UsageError("--ll-ring-net-slots must be 1 to 64");
        }
        h.SetNcclAttribute("LlRingNetSlots", UintegerValue(slots));
    }
    if (o.Has("tree-net-slots"))
    {
        const uint32_t slots = o.Count("tree-net-slots", 1);
        if (slots < 1 || slots > 64)
        {
            throw UsageError("--tree-net-slots must be 1 to 64");
        }
        h.SetNcclAttribute("TreeNetSlots", UintegerValue(slots));
    }
    if (o.Has("trees-on-all-nics"))
    {
        const std::string v = o.Get("trees-on-all-nics", "");
        if (v != "true" && v != "false")
        {
            throw UsageError("--trees-on-all-nics must be true or false");
        }
        h.SetNcclAttribute("TreesOnAllNics", BooleanValue(v == "true"));
    }
    if (o.Has("p2p-copy-out"))
    {
        const std::string v = o.Get("p2p-copy-out", "");
        if (v != "true" && v != "false")
        {
            throw UsageError("--p2p-copy-out must be true or false");
        }
        h.SetNcclAttribute("P2pCopyOut", BooleanValue(v == "true"));
    }
    if (o.Has("chunk-bytes"))
    {
        h.SetNcclAttribute("ChunkBytes", UintegerValue(ParseBytes(o.Get("chunk-bytes", ""))));
    }
}

namespace
{

double
BusFactor(CollKind k, uint32_t n)
{
    switch (k)
    {
    case CollKind::AllReduce:
        return 2.0 * (n - 1) / n;
    case CollKind::AllGather:
    case CollKind::ReduceScatter:
    case CollKind::AllToAll:
        return double(n - 1) / n;
    default:
        return 1.0;
    }
}

void
PrintUsage(std::ostream& os)
{
    os << "usage: gpusim <command> [options]\n"
          "\n"
          "commands:\n"
          "  collective   nccl-tests-style sweep of one collective inside the simulator\n"
          "  simulate     simulate a gpusim trace directory (manifest.json + rank-N.jsonl)\n"
          "  replay       replay PyTorch profiler (Kineto) traces on the engine\n"
          "  record       run a CUDA/NCCL program on the shim and write its trace directory\n"
          "  run          run a CUDA/NCCL program live on the simulated cluster (its own timers\n"
          "               read simulated time)\n"
          "  validate     the NCCL model against published nccl-tests results\n"
          "  chakra       import/export Chakra execution traces (ASTRA-sim, MLCommons)\n"
          "  simai        import SimAI / AICB workload files as trace directories\n"
          "  jobs         several jobs (traces, generated training, collectives) on one fabric\n"
          "  validate-training  'generate' against published training throughput\n"
          "  generate     an LLM training iteration (Megatron-style TP/PP/DP) from a model\n"
          "               and a plan: trace directory and/or direct simulation\n"
          "  search       the fastest parallelism plan for a model on a cluster (enumerate,\n"
          "               memory check, bound pruning, parallel simulation)\n"
          "\n"
          "Run 'gpusim <command> --help' for its options. With no options, 'gpusim collective'\n"
          "sweeps AllReduce from 1 KiB to 1 GiB on 4 x dgx-h100 (32 GPUs).\n";
}

void
PrintCollectiveUsage(std::ostream& os)
{
    os << "usage: gpusim collective [options]\n"
          "  --preset NAME         cluster preset (dgx-h100, dgx-h200, dgx-a100, aws-p5);\n"
          "                        default dgx-h100\n"
          "  --cluster FILE        cluster spec in YAML (instead of --preset)\n"
          "  --nic-stack verbs|efa how NCCL reaches the network: its own IB/RoCE transport\n"
          "                        (dgx presets) or AWS EFA through aws-ofi-nccl (aws-p5)\n"
          "  --nccl-version V      the NCCL release whose tuner picks algorithm and protocol\n"
          "                        (2.8 - 2.29, e.g. 2.22.3; default 2.26.2)\n"
          "  --servers N --gpus-per-server G --nics-per-server K --nic-gbps X --nvlink-gbps Y\n"
          "  --fabric single-switch|leaf-spine|fat-tree|rail  --oversubscription R  --gpu MODEL\n"
          "  --link-down A-B@T[,up@T2]  --link-rate A-B=50%|100Gbps@T[,full@T2]  (A-B: a cable;\n"
          "      A alone: every link of a NIC or switch; repeatable)  --straggler GPU=2x|50%@T\n"
          "      (repeatable)  --convergence T (routing delay after a link change, default 0)\n"
          "  --routing ecmp|dmodk|spray|spray-rr|flowlet|adaptive   load balancing over the\n"
          "                        equal-cost paths (default: the preset's; packet backend:\n"
          "                        per packet at every switch; flow backend: spray, spray-rr\n"
          "                        and flowlet split each transfer over all equal paths,\n"
          "                        adaptive merges the spines)\n"
          "  --op allreduce|allgather|reducescatter|broadcast|reduce|alltoall|sendrecv\n"
          "  --algo ring|tree|nvls|nvlstree|auto --proto simple|ll128|ll|auto --channels C\n"
          "  --ring-net-slots K    chunks an LL128 / Simple ring connection between\n"
          "                        servers keeps in flight (NCCL: 8; default 1,\n"
          "                        doc/validation.md)\n"
          "  --ll-ring-net-slots K the same for LL rings (default 8, NCCL's)\n"
          "  --tree-net-slots K    the same for Simple / LL128 tree connections\n"
          "                        (default 8)\n"
          "  --trees-on-all-nics true|false   a mirrored pair of trees per NIC (NCCL's\n"
          "                        duplicated channels; default); false: a tree per NIC,\n"
          "                        pairs on every other NIC (doc/validation.md)\n"
          "  --p2p-copy-out true|false   point-to-point over NVLink pays the receiver's\n"
          "                        copy of its last step out of NCCL's FIFO (default\n"
          "                        true: a process per GPU; false: NCCL's direct mode\n"
          "                        of ranks in one process, doc/design.md)\n"
          "  --fidelity auto|chunk|collective|flows   auto (default): each collective takes\n"
          "                        the shortcut that is exact for it (ring as edge flows,\n"
          "                        NVLS/NVLSTree by one rail, repeats replayed; flow\n"
          "                        backend) or runs chunk by chunk;\n"
          "                        chunk: the detailed model for every collective;\n"
          "                        collective: replay ops that already ran alone on idle\n"
          "                        links; flows: also run isolated ring collectives as one\n"
          "                        flow per ring edge (doc/flow-backend.md)\n"
          "  --min-bytes B --max-bytes B --step-factor F | --bytes B   (K/M/G suffixes)\n"
          "  --dtype float|half|bfloat16|double|int8|...   (default float)\n"
          "  --efficiency E        override protocol efficiency; 1 = ideal wire (closed forms)\n"
          "  --backend flow|packet network backend (packet: ns-3 TCP over the fabric)\n"
          "  --cc NAME --queue NAME --mtu BYTES --buffer BYTES   packet backend: TCP congestion\n"
          "                        control (dctcp, cubic, newreno, bbr, ...), switch queue disc\n"
          "                        (red-ecn, step-ecn, fifo, red, fq-codel, codel, pie, fq-pie,\n"
          "                        cobalt, ecn: the default with rdma), fabric MTU (9000),\n"
          "                        switch buffer per port\n"
          "  --transport tcp|rdma  packet backend: ns-3 TCP (default) or RoCEv2 queue pairs;\n"
          "                        with rdma, --cc is none, dcqcn (default), hpcc, timely, dctcp\n"
          "  --pfc on|off          packet backend: priority flow control for the lossless class\n"
          "                        (RDMA, DSCP 3) in switches and NICs; needs --queue ecn\n"
          "  --rdma-reorder gbn|tolerant   rdma receiver on out-of-order packets: go-back-N\n"
          "                        (default) or keep them and ACK once contiguous\n"
          "  --flowlet-gap-us X    packet backend, --routing flowlet: flowlet gap (50)\n"
          "  --sample-us X         packet backend: sample link utilisation and queue backlog\n"
          "                        every X us (time series in the JSON and CSV)\n"
          "  --net-csv PREFIX      packet backend: per-link, per-queue and per-transfer CSV\n"
          "                        tables for each size (PREFIX-<bytes>B-*.csv)\n"
          "  --json FILE           results as JSON (each result carries the backend's network\n"
          "                        statistics under \"network\")\n"
          "  --trace FILE          Chrome/Perfetto trace of the sweep\n"
          "  --background ITEM     background traffic next to each size's run (repeatable;\n"
          "                        times from the run's launch): bulk:src=0-7,dst=63,bytes=1G\n"
          "                        [,rate=25Gbps,chunk=256K,start=1ms,period=T,count=N],\n"
          "                        incast:src=8-15,dst=0,bytes=4M[,period=1ms,count=10],\n"
          "                        poisson:src=..,dst=..,bytes=64K,1M,interval=20us,count=N\n"
          "                        |stop=T[,seed=S]; FCT summary after the table and in the\n"
          "                        JSON (doc/user-guide.md, Background traffic)\n"
          "  --quiet               no progress on stderr\n";
}

DataType
ParseDtypeOption(const std::string& s)
{
    static const std::map<std::string, DataType> names = {
        {"float", DataType::F32}, {"half", DataType::F16},     {"bfloat16", DataType::BF16},
        {"double", DataType::F64}, {"int8", DataType::I8},     {"uint8", DataType::U8},
        {"int32", DataType::I32}, {"uint32", DataType::U32},   {"int64", DataType::I64},
        {"uint64", DataType::U64}, {"fp8e4m3", DataType::F8E4M3}, {"fp8e5m2", DataType::F8E5M2}};
    auto it = names.find(s);
    if (it != names.end())
    {
        return it->second;
    }
    DataType t;
    if (ParseDataType(s, t))
    {
        return t;
    }
    throw UsageError("unknown --dtype '" + s + "'");
}

const char*
NcclTypeName(DataType t)
{
    switch (t)
    {
    case DataType::F32:
        return "float";
    case DataType::F16:
        return "half";
    case DataType::BF16:
        return "bfloat16";
    case DataType::F64:
        return "double";
    default:
        return ToString(t);
    }
}

/// One size of a `collective` sweep: what the table prints for it.
struct SizeRun
{
    double us = 0;
    std::string algo = "p2p";
    std::string proto = "simple";
    uint32_t channels = 1;
    std::string networkJson;
    std::string backendName;
    bool stuck = false;
    std::string stuckReport;
    NcclWorld::FidelityStats fidelity; //!< how its collective ran
    std::string path = "chunk";        //!< CollectivePath of its collective
    std::vector<BackgroundSummary> background; //!< --background generators during the run
    std::string backgroundJson;
    std::string partition; //!< distributed runs: how the packet network was partitioned
};

/// Simulates one size as an independent run (fresh simulator and backend, every rank launching
/// at `offset`, like nccl-tests' steady state); moves `offset` past its end so the runs lie end
/// to end on the trace's timeline.
SizeRun
SimulateOneSize(const Options& o,
                GpuWorkloadHelper& helper,
                GpuClusterHelper& cluster,
                const ClusterSpec& spec,
                const NodeContainer& gpus,
                CollKind kind,
                DataType dtype,
                bool sendrecv,
                uint64_t size,
                JsonWriter* trace,
                Time& offset)
{
    const uint32_t n = gpus.GetN();
    SizeRun res;
    JobBuilder job(n);
    job.AllRanks().CommInit("world").CreateStream(1, true);
    if (sendrecv)
    {
        for (uint32_t r = 0; r < n; ++r)
        {
            job.Rank(r)
                .Send(1, "world", (r + 1) % n, size, 1)
                .Recv(1, "world", (r + n - 1) % n, size, 1);
        }
        job.AllRanks();
    }
    else
    {
        job.Collective(1, kind, "world", size, dtype, 0);
    }
    job.SyncStream(1);
    Ptr<NetworkBackend> backend = MakeBackend(o, cluster.GetTopology());
    res.backendName = backend->GetName();
    helper.SetBackend(backend);
    Ptr<GpuWorkload> w = helper.Install(job.BuildShared(), gpus, offset);
    // Background traffic starts with the collective (its times count from the run's launch).
    Ptr<BackgroundTraffic> bg = MakeBackgroundTraffic(spec, n);
    if (bg)
    {
        bg->Install(backend, offset);
    }
    Simulator::Run();
    RunReport rep = w->Check();
    if (bg)
    {
        res.background = bg->Summaries();
        res.backgroundJson = bg->SummaryJson();
        bg->Dispose();
    }
    if (!rep.completed)
    {
        res.stuck = true;
        for (const auto& e : rep.errors)
        {
            res.stuckReport += "error: " + e + "\n";
        }
        res.stuckReport += rep.stuck;
        Simulator::Destroy();
        return res;
    }
    // Time: first launch to last completion over all ranks.
    double t0 = 1e300, t1 = 0;
    for (const auto& a : w->GetActivities())
    {
        if (a.communication)
        {
            t0 = std::min(t0, a.start.GetNanoSeconds() / 1e3);
            t1 = std::max(t1, a.end.GetNanoSeconds() / 1e3);
        }
    }
    res.us = t1 - t0;
    Ptr<Communicator> comm = w->GetNcclWorld()->Find("world");
    const CollectivePlan plan = w->GetNcclWorld()->Plan(kind, size, *comm);
    res.fidelity = w->GetNcclWorld()->GetFidelityStats();
    if (!w->GetCollectives().empty())
    {
        res.path = ToString(w->GetCollectives().front().path);
    }
    if (!sendrecv)
    {
        res.algo = plan.algo;
        res.channels = plan.channels;
    }
    res.proto = plan.proto;
    if (trace)
    {
        w->WriteChromeTraceEvents(*trace);
    }
    if (o.Has("json"))
    {
        res.networkJson = backend->StatsJson();
    }
    if (auto packet = DynamicCast<PacketBackend>(backend))
    {
        res.partition = packet->GetPartitionDescription();
    }
    if (o.Has("net-csv"))
    {
        // Per-link, per-queue and per-transfer tables of this size's run.
        DynamicCast<PacketBackend>(backend)->WriteCsv(o.Get("net-csv", "") + "-" +
                                                      std::to_string(size) + "B");
    }
    offset = rep.endTime + MicroSeconds(10);
    w->Dispose();
    Simulator::Destroy();
    return res;
}

/// The nccl-tests-style table of a sweep (to `out`) and its JSON (returned).
JsonWriter
PrintCollectiveResults(std::ostream& out,
                       const Options& o,
                       const ClusterSpec& spec,
                       const std::string& backendName,
                       CollKind kind,
                       bool sendrecv,
                       DataType dtype,
                       uint32_t n,
                       const std::vector<uint64_t>& sizes,
                       const std::vector<SizeRun>& runs)
{
    const uint64_t elem = DataTypeSize(dtype);
    const std::string opLabel = sendrecv ? "sendrecv" : ToString(kind);
    out << "# gpusim collective: " << opLabel << " on " << n << " GPUs\n";
    out << "# cluster: " << DescribeCluster(spec) << "\n";
    out << "# backend: " << backendName << ", efficiency: "
        << (o.Has("efficiency") ? o.Get("efficiency", "") : "protocol defaults") << "\n";
    if (!runs.empty() && !runs.front().partition.empty())
    {
        out << "# distributed: " << runs.front().partition << "\n";
    }
    NcclWorld::FidelityStats fidelity;
    for (const SizeRun& r : runs)
    {
        fidelity.Add(r.fidelity);
    }
    const std::string mode = FidelityOption(o, "auto");
    out << FidelityReportLine(mode, fidelity);
    out << "#\n";
    out << "#       size         count      type   redop    root    algo   proto  ch"
           "        time    algbw    busbw\n";
    out << "#        (B)    (elements)                                                "
           "  (us)   (GB/s)   (GB/s)\n";
    JsonWriter j;
    j.BeginObject();
    j.Key("cluster").String(DescribeCluster(spec)).Key("backend").String(backendName);
    j.Key("fidelity").Raw(FidelityJson(mode, fidelity));
    j.Key("results").BeginArray();
    double busSum = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        const double us = runs[i].us;
        const double algbw = us > 0 ? sizes[i] / (us * 1e-6) / 1e9 : 0;
        const double busbw = algbw * (sendrecv ? 1.0 : BusFactor(kind, n));
        busSum += busbw;
        const bool reduces = kind == CollKind::AllReduce || kind == CollKind::Reduce ||
                             kind == CollKind::ReduceScatter;
        char line[256];
        std::snprintf(line, sizeof(line),
                      "%12llu  %12llu  %8s  %6s  %6s  %6s  %6s  %2u  %10.2f  %7.2f  %7.2f\n",
                      static_cast<unsigned long long>(sizes[i]),
                      static_cast<unsigned long long>(sizes[i] / elem), NcclTypeName(dtype),
                      reduces ? "sum" : "none",
                      (kind == CollKind::Broadcast || kind == CollKind::Reduce) ? "0" : "-1",
                      runs[i].algo.c_str(), runs[i].proto.c_str(), runs[i].channels, us, algbw, busbw);
        out << line;
        j.BeginObject();
        j.Key("op").String(opLabel).Key("bytes").Uint(sizes[i]);
        j.Key("count").Uint(sizes[i] / elem).Key("type").String(NcclTypeName(dtype));
        j.Key("ranks").Uint(n).Key("algo").String(runs[i].algo).Key("proto").String(runs[i].proto);
        j.Key("channels").Uint(runs[i].channels).Key("path").String(runs[i].path);
        j.Key("time_us").Double(us).Key("algbw_GBps").Double(algbw);
        j.Key("busbw_GBps").Double(busbw);
        if (!runs[i].networkJson.empty())
        {
            j.Key("network").Raw(runs[i].networkJson);
        }
        if (!runs[i].backgroundJson.empty())
        {
            j.Key("background").Raw(runs[i].backgroundJson);
        }
        j.EndObject();
    }
    j.EndArray();
    const double avg = busSum / sizes.size();
    j.Key("avg_busbw_GBps").Double(avg);
    j.EndObject();
    char summary[128];
    std::snprintf(summary, sizeof(summary), "# Avg bus bandwidth    : %.3f GB/s\n", avg);
    out << "#\n" << summary;
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        if (!runs[i].background.empty())
        {
            PrintBackgroundSummary(out, runs[i].background,
                                   sizes.size() == 1 ? "background traffic"
                                                     : "background traffic, " +
                                                           std::to_string(sizes[i]) + " B run");
        }
    }
    return j;
}

/// nccl-tests' sizes from min to max by factor, rounded down to whole units, without repeats.
std::vector<uint64_t>
SweepSizes(uint64_t minBytes, uint64_t maxBytes, double factor, uint64_t unit)
{
    std::vector<uint64_t> sizes;
    for (double b = static_cast<double>(minBytes); b <= maxBytes * 1.000001; b *= factor)
    {
        const uint64_t s = static_cast<uint64_t>(b) / unit * unit;
        if (s > 0 && (sizes.empty() || s != sizes.back()))
        {
            sizes.push_back(s);
        }
        if (minBytes == maxBytes)
        {
            break;
        }
    }
    return sizes;
}

} // namespace

uint64_t
ParseBytes(const std::string& s)
{
    try
    {
        return ParseByteSize(s);
    }
    catch (const std::invalid_argument& e)
    {
        throw UsageError(e.what());
    }
}

int
CollectiveCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::set<std::string> valued = {"op", "min-bytes", "max-bytes", "step-factor", "bytes",
                                     "json", "trace", "dtype", "net-csv", "background"};
    valued.insert(kClusterOptions.begin(), kClusterOptions.end());
    valued.insert(kNcclOptions.begin(), kNcclOptions.end());
    try
    {
        Options o(args, valued, {"help", "quiet"});
        if (o.Has("help"))
        {
            PrintCollectiveUsage(out);
            return 0;
        }
        if (!o.Positional().empty())
        {
            throw UsageError("unexpected argument '" + o.Positional().front() + "'");
        }
        const std::string opName = o.Get("op", "allreduce");
        CollKind kind;
        const bool sendrecv = opName == "sendrecv";
        if (!sendrecv && (!ParseCollKind(opName, kind) || kind == CollKind::Send ||
                          kind == CollKind::Recv))
        {
            throw UsageError("unknown --op '" + opName + "'");
        }
        if (sendrecv)
        {
            kind = CollKind::Send;
        }
        const DataType dtype = ParseDtypeOption(o.Get("dtype", "float"));
        uint64_t minBytes = ParseBytes(o.Get("min-bytes", "1K"));
        uint64_t maxBytes = ParseBytes(o.Get("max-bytes", "1G"));
        if (o.Has("bytes"))
        {
            minBytes = maxBytes = ParseBytes(o.Get("bytes", ""));
        }
        const double factor = o.Number("step-factor", 4);
        if (factor <= 1 && minBytes != maxBytes)
        {
            throw UsageError("--step-factor must be > 1");
        }
        if (minBytes == 0 || minBytes > maxBytes)
        {
            throw UsageError("need 0 < --min-bytes <= --max-bytes");
        }

        const ClusterSpec spec = SpecFromOptions(o, 0);
        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        NodeContainer gpus = cluster.Create();
        const uint32_t n = gpus.GetN();
        MakeBackgroundTraffic(spec, n); // bad generators are reported before any run

        // Sizes, rounded like nccl-tests to whole elements (and whole per-rank blocks).
        const uint64_t elem = DataTypeSize(dtype);
        const bool perRankBlocks = kind == CollKind::AllGather ||
                                   kind == CollKind::ReduceScatter || kind == CollKind::AllToAll;
        const uint64_t unit = perRankBlocks ? elem * n : elem;
        const std::vector<uint64_t> sizes = SweepSizes(minBytes, maxBytes, factor, unit);
        if (sizes.empty())
        {
            throw UsageError("no size in the range holds one element per rank");
        }

        // Each size is an independent run (fresh simulator and backend, every rank launching
        // at the same instant), like nccl-tests' steady state; runs are laid end to end on the
        // timeline so one trace can show the whole sweep.
        GpuWorkloadHelper helper;
        ConfigureNccl(o, helper);
        const bool wantTrace = o.Has("trace");
        helper.SetWorkloadAttribute("RecordTransfers", BooleanValue(wantTrace));
        const bool progress = !o.Has("quiet");
        const bool tty = isatty(STDERR_FILENO);
        auto wallStart = std::chrono::steady_clock::now();
        std::vector<SizeRun> runs(sizes.size());
        std::string backendName;
        JsonWriter trace;
        trace.BeginObject().Key("displayTimeUnit").String("ns").Key("traceEvents").BeginArray();
        Time offset = Seconds(0);
        for (size_t i = 0; i < sizes.size(); ++i)
        {
            const SizeRun r = SimulateOneSize(o, helper, cluster, spec, gpus, kind, dtype, sendrecv,
                                              sizes[i], wantTrace ? &trace : nullptr, offset);
            if (r.stuck)
            {
                err << "gpusim: the simulation of " << sizes[i]
                    << " B stopped with work still waiting:\n"
                    << r.stuckReport;
                return 3;
            }
            runs[i] = r;
            backendName = r.backendName;
            if (progress)
            {
                double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                            wallStart)
                                  .count();
                err << (tty ? "\r" : "") << "gpusim: [" << i + 1 << "/" << sizes.size() << "] "
                    << sizes[i] << " B simulated (" << std::fixed << std::setprecision(2) << secs
                    << " s wall)" << (tty ? "" : "\n") << std::flush;
            }
        }
        if (progress && tty)
        {
            err << "\n";
        }
        trace.EndArray().EndObject();
        NcclWorld::FidelityStats fidelity;
        for (const SizeRun& r : runs)
        {
            fidelity.Add(r.fidelity);
        }
        WarnFidelityConflicts(fidelity, err);

        JsonWriter j = PrintCollectiveResults(out, o, spec, backendName, kind, sendrecv, dtype, n,
                                              sizes, runs);
        if (o.Has("json"))
        {
            WriteFileAtomically(o.Get("json", ""), j.Take() + "\n");
        }
        if (wantTrace)
        {
            WriteFileAtomically(o.Get("trace", ""), trace.Take() + "\n");
        }
        return 0;
    }
    catch (const UsageError& e)
    {
        err << "gpusim collective: " << e.what() << "\n";
        PrintCollectiveUsage(err);
        Simulator::Destroy();
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim collective: error: " << e.what() << "\n";
        Simulator::Destroy();
        return 2;
    }
}

int
SimulateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::set<std::string> valued = {"json", "trace", "cost-model", "scale-kernels",
                                     "kernel-table", "query-syncs", "ranks", "background"};
    valued.insert(kClusterOptions.begin(), kClusterOptions.end());
    valued.insert(kNcclOptions.begin(), kNcclOptions.end());
    try
    {
        Options o(args, valued, {"help", "no-dedup"});
        if (o.Has("help") || o.Positional().size() != 1)
        {
            (o.Has("help") ? out : err)
                << "usage: gpusim simulate DIR [--preset NAME | --cluster FILE] [cluster and "
                   "NCCL options as for 'collective']\n"
                   "       [--cost-model recorded|roofline] [--scale-kernels REGEX=FACTOR]\n"
                   "       [--kernel-table FILE] [--query-syncs wait|ignore] [--no-dedup]\n"
                   "       [--ranks all|mirrored] [--json FILE] [--trace FILE]\n"
                   "       [--background ITEM]... (as for 'collective'; times from 0)\n"
                   "  --ranks mirrored: ranks with identical op lists mirror the first of them\n"
                   "  (lockstep, doc/flow-backend.md); default all\n"
                   "  --fidelity: default auto (chunk for a live run's recording, which then\n"
                   "  reproduces the run)\n"
                   "  DIR may also be a Chakra ET trace (DIR or DIR/NAME of NAME.RANK.et files)\n"
                   "  or a SimAI workload file (one pass; without all_gpus in its header the\n"
                   "  job takes every GPU of the cluster)\n";
            return o.Has("help") ? 0 : 1;
        }
        QuerySyncPolicy queryPolicy;
        if (!ParseQuerySyncPolicy(o.Get("query-syncs", "wait"), queryPolicy))
        {
            throw UsageError("--query-syncs must be wait or ignore");
        }
        std::string dedupLine;
        // A SimAI workload without all_gpus runs on every GPU of the cluster (SimAI takes the
        // job size from its topology).
        const std::string& input = o.Positional().front();
        const uint32_t simaiRanks = IsSimaiWorkloadFile(input) &&
                                            ReadSimaiWorkload(input).allGpus == 0
                                        ? SpecFromOptions(o, 0).TotalGpus()
                                        : 0;
        std::shared_ptr<JobTrace> job = LoadJobForSimulation(input, !o.Has("no-dedup"),
                                                             queryPolicy, dedupLine, simaiRanks);
        const ClusterSpec spec = SpecFromOptions(o, job->ranks.size());
        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        NodeContainer gpus = cluster.Create();
        if (gpus.GetN() < job->ranks.size())
        {
            throw std::invalid_argument("the trace has " + std::to_string(job->ranks.size()) +
                                        " ranks but the cluster has " +
                                        std::to_string(gpus.GetN()) + " GPUs");
        }
        // A live run's recording replays through the same op-feed path the live run took, so
        // the results are identical (doc/live-mode.md): at the live run's default fidelity.
        const bool live = job->metadata.count("mode") && job->metadata.at("mode") == "live";
        const std::string defaultFidelity = live ? "chunk" : "auto";
        GpuWorkloadHelper helper;
        helper.SetBackend(MakeBackend(o, cluster.GetTopology()));
        ConfigureNccl(o, helper, defaultFidelity);
        ConfigureWorkload(o, helper);
        ConfigureRanks(o, helper, "all");
        Ptr<GpuWorkload> w;
        if (live)
        {
            Ptr<TraceOpFeed> feed = CreateObject<TraceOpFeed>();
            feed->SetJob(ReadJobTrace(o.Positional().front())); // unshared, as recorded
            w = helper.InstallFeed(feed, gpus);
        }
        else
        {
            w = helper.Install(job, gpus);
        }
        Ptr<BackgroundTraffic> bg = MakeBackgroundTraffic(spec, gpus.GetN());
        if (bg)
        {
            bg->Install(helper.GetBackend());
        }
        Simulator::Run();
        RunReport rep = w->Check();
        out << "# gpusim simulate: " << job->ranks.size() << " ranks from "
            << o.Positional().front() << " (" << job->source << ")\n";
        out << dedupLine << KernelTableSummary(*w);
        out << "# cluster: " << DescribeCluster(spec) << "\n";
        out << DistributedLine(helper.GetBackend());
        PrintIterations(out, *w);
        out << "# end of simulation: " << rep.endTime.GetNanoSeconds() / 1e3 << " us\n";
        PrintFidelityStats(o, defaultFidelity, *w, out, err);
        std::string extraJson;
        if (bg)
        {
            PrintBackgroundSummary(out, bg->Summaries());
            extraJson = "\"background\":" + bg->SummaryJson();
            bg->Dispose();
        }
        return FinishSimulation("simulate", o, w, rep, err, extraJson);
    }
    catch (const UsageError& e)
    {
        err << "gpusim simulate: " << e.what() << "\n";
        Simulator::Destroy();
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim simulate: error: " << e.what() << "\n";
        Simulator::Destroy();
        return 2;
    }
}

void
PrintFidelityStats(const Options& o,
                   const std::string& defaultFidelity,
                   const GpuWorkload& w,
                   std::ostream& out,
                   std::ostream& err)
{
    const std::string fidelity = FidelityOption(o, defaultFidelity);
    const NcclWorld::FidelityStats& s = w.GetNcclWorld()->GetFidelityStats();
    out << FidelityReportLine(fidelity, s);
    if (fidelity != "collective" && fidelity != "flows")
    {
        WarnFidelityConflicts(s, err);
        return;
    }
    out << "# collective fidelity: " << s.replayed << " collectives replayed, "
        << s.watched + s.unwatched + s.detailed << " run chunk by chunk, " << s.conflicts
        << " conflicts";
    if (fidelity == "flows")
    {
        out << ", " << s.fluid << " rings run as edge flows";
    }
    out << "\n";
    WarnFidelityConflicts(s, err);
}

void
ConfigureWorkload(const Options& o, GpuWorkloadHelper& helper)
{
    const std::string cm = o.Get("cost-model", "recorded");
    if (cm != "recorded" && cm != "roofline")
    {
        throw UsageError("--cost-model must be recorded or roofline");
    }
    helper.SetCostModel(cm == "recorded" ? "ns3::RecordedDurationCostModel"
                                         : "ns3::RooflineCostModel");
    if (o.Has("kernel-table"))
    {
        UseKernelTable(helper, o.Get("kernel-table", ""), cm == "recorded");
    }
    for (const std::string& s : o.All("scale-kernels"))
    {
        std::string re;
        double factor;
        ParseKernelScale(s, re, factor);
        helper.AddKernelScale(re, factor);
    }
    helper.SetWorkloadAttribute("RecordTransfers", BooleanValue(o.Has("trace")));
}

int
FinishSimulation(const std::string& command,
                 const Options& o,
                 Ptr<GpuWorkload> w,
                 const RunReport& rep,
                 std::ostream& err,
                 const std::string& extraJson)
{
    for (const auto& e : rep.errors)
    {
        err << "gpusim " << command << ": device error: " << e << "\n";
    }
    int code = 0;
    if (!rep.completed)
    {
        err << "gpusim " << command << ": the simulation stopped with work still waiting:\n"
            << rep.stuck;
        code = 3;
    }
    else
    {
        if (o.Has("json"))
        {
            std::string metrics = w->MetricsJson();
            const size_t close = metrics.rfind('}');
            if (!extraJson.empty() && close != std::string::npos)
            {
                metrics.insert(close, "," + extraJson);
            }
            WriteFileAtomically(o.Get("json", ""), metrics);
        }
        if (o.Has("trace"))
        {
            WriteFileAtomically(o.Get("trace", ""), w->ChromeTraceJson());
        }
    }
    w->Dispose();
    Simulator::Destroy();
    return code;
}

Ptr<BackgroundTraffic>
MakeBackgroundTraffic(const ClusterSpec& spec, uint32_t nGpus)
{
    if (spec.background.empty())
    {
        return nullptr;
    }
    Ptr<BackgroundTraffic> bg = CreateObject<BackgroundTraffic>();
    try
    {
        for (const std::string& item : spec.background)
        {
            bg->Add(item);
        }
        bg->Validate(nGpus);
    }
    catch (const std::invalid_argument& e)
    {
        throw UsageError(std::string("--background: ") + e.what());
    }
    return bg;
}

void
PrintBackgroundSummary(std::ostream& out,
                       const std::vector<BackgroundSummary>& summaries,
                       const std::string& title)
{
    out << "# " << title << " (flow completion times of completed flows):\n";
    out << "#  generator         flows   done          bytes   fct_mean_us    fct_p50_us"
           "    fct_p99_us    fct_max_us  gbps_per_flow\n";
    for (const BackgroundSummary& s : summaries)
    {
        char line[256];
        std::snprintf(line, sizeof(line),
                      "#  %-16s %6llu %6llu %14llu %13.1f %13.1f %13.1f %13.1f %14.2f\n",
                      s.name.c_str(), static_cast<unsigned long long>(s.flows),
                      static_cast<unsigned long long>(s.completed),
                      static_cast<unsigned long long>(s.bytes), s.meanFct.GetNanoSeconds() / 1e3,
                      s.p50Fct.GetNanoSeconds() / 1e3, s.p99Fct.GetNanoSeconds() / 1e3,
                      s.maxFct.GetNanoSeconds() / 1e3, s.meanGbps);
        out << line;
        out << "#    " << s.text << "\n";
    }
}

void
PrintIterations(std::ostream& out, const GpuWorkload& w)
{
    out << "#  rank  iteration               simulated_us  recorded_us  exposed_comp  "
           "exposed_comm   overlap      idle\n";
    for (const auto& it : w.GetIterations())
    {
        char recorded[32] = "-";
        if (it.recordedUs >= 0)
        {
            std::snprintf(recorded, sizeof(recorded), "%.1f", it.recordedUs);
        }
        char line[256];
        std::snprintf(line, sizeof(line), "%7u  %-22s %12.1f  %11s  %12.1f  %12.1f  %8.1f  %8.1f\n",
                      it.rank, it.name.c_str(), (it.end - it.start).GetNanoSeconds() / 1e3,
                      recorded, it.computeOnlyUs, it.commOnlyUs, it.overlapUs, it.idleUs);
        out << line;
    }
}

int
GpusimMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    if (args.empty())
    {
        // No command is a request for help (ns-3 trees also run every program without
        // arguments as a smoke test: ctest-gpusim).
        PrintUsage(out);
        return 0;
    }
    const std::string cmd = args.front();
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "collective")
    {
        return CollectiveCommand(rest, out, err);
    }
    if (cmd == "simulate")
    {
        return SimulateCommand(rest, out, err);
    }
    if (cmd == "replay")
    {
        return ReplayCommand(rest, out, err);
    }
    if (cmd == "record")
    {
        return RecordCommand(rest, out, err);
    }
    if (cmd == "run")
    {
        return RunCommand(rest, out, err);
    }
    if (cmd == "chakra")
    {
        return ChakraCommand(rest, out, err);
    }
    if (cmd == "simai")
    {
        return SimaiCommand(rest, out, err);
    }
    if (cmd == "jobs")
    {
        return JobsCommand(rest, out, err);
    }
    if (cmd == "validate-training")
    {
        return ValidateTrainingCommand(rest, out, err);
    }
    if (cmd == "validate")
    {
        return ValidateCommand(rest, out, err);
    }
    if (cmd == "generate")
    {
        return GenerateCommand(rest, out, err);
    }
    if (cmd == "search")
    {
        return SearchCommand(rest, out, err);
    }
    if (cmd == "--help" || cmd == "-h" || cmd == "help")
    {
        PrintUsage(out);
        return 0;
    }
    err << "gpusim: unknown command '" << cmd << "'\n";
    PrintUsage(err);
    return 1;
}

} // namespace gpusim
} // namespace ns3
