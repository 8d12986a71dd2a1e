/*
 * Congestion-control study on the packet backend: a ring AllReduce and an AllToAll on a 2:1
 * oversubscribed leaf-spine (8 servers x 1 GPU, 4 per leaf, 2 spines) while three GPUs of the
 * other leaf push a background incast into GPU 0. Every (TCP congestion control, switch queue
 * disc) pair runs the same scenario; the flow backend runs it once as the fluid reference.
 * Prints a table and writes two CSVs: one row per run, and the occupancy time series of each
 * run's hottest switch queue (plot them with plot-cc-study.py).
 *
 *   gpusim-collective-cc-study --ccs=NewReno,Cubic,Dctcp,Bbr --queues=fifo,red-ecn,step-ecn \
 *       --bytes=8M --gbps=100 --csv=cc-study.csv --series=cc-study-series.csv
 */
#include "ns3/cluster-spec.h"
#include "ns3/command-line.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/byte-size.h"
#include "ns3/job-builder.h"
#include "ns3/packet-backend.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"
#include "ns3/uinteger.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace ns3;
using gpusim::CollKind;

NS_LOG_COMPONENT_DEFINE("CollectiveCcStudy");

namespace
{

std::vector<std::string>
Split(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
    {
        if (!item.empty())
        {
            out.push_back(item);
        }
    }
    return out;
}

struct Row
{
    std::string collective;
    std::string cc;
    std::string queue;
    double timeUs = 0;
    double p50KB = 0;
    double p99KB = 0;
    uint64_t marks = 0;
    uint64_t drops = 0;
    uint64_t retx = 0;
    bool completed = false;
};

struct Scenario
{
    gpusim::ClusterSpec spec;
    CollKind kind;
    uint64_t bytes;
    uint64_t incastBytes;
    Time sample;
};

/// Runs one collective plus the background incast; fills the row (and the series file).
Row
RunOne(const Scenario& sc, Ptr<NetworkBackend> net, std::ostream* series, const std::string& label)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(sc.spec);
    NodeContainer gpus = cluster.Create();
    net->SetTopology(cluster.GetTopology());
    JobBuilder job(gpus.GetN());
    job.AllRanks().CommInit("c").Collective(1, sc.kind, "c", sc.bytes, gpusim::DataType::F32, 0);
    job.SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue("ring"));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    // Background incast from the other leaf into GPU 0, on its own connections.
    const uint32_t n = gpus.GetN();
    for (uint32_t s = n - 3; s < n; ++s)
    {
        net->StartTransfer((1ull << 40) + s, s, 0, sc.incastBytes, 1000, nullptr);
    }
    Simulator::Run();
    RunReport rep = w->Check();
    Row r;
    r.completed = rep.completed && !w->GetCollectives().empty();
    if (r.completed)
    {
        const CollectiveRecord& c = w->GetCollectives().at(0);
        r.timeUs = (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3;
    }
    else
    {
        std::cerr << label << ": did not complete:\n" << rep.stuck;
    }
    if (auto pkt = DynamicCast<PacketBackend>(net))
    {
        const uint32_t hot = pkt->GetHottestQueueLink();
        if (hot != UINT32_MAX)
        {
            r.p50KB = pkt->GetBacklogQuantile(hot, 0.5) / 1e3;
            r.p99KB = pkt->GetBacklogQuantile(hot, 0.99) / 1e3;
            if (series)
            {
                const auto& t = pkt->GetSampleTimes();
                const auto b = pkt->GetBacklogSeries(hot);
                const auto& L = pkt->GetTopology()->Links()[hot];
                const auto& V = pkt->GetTopology()->Vertices();
                for (size_t i = 0; i < t.size(); ++i)
                {
                    *series << label << "," << V[L.from].name << "->" << V[L.to].name << ","
                            << t[i].GetNanoSeconds() / 1e3 << "," << b[i] << "\n";
                }
            }
        }
        r.marks = pkt->GetTotalMarks();
        r.drops = pkt->GetTotalDrops();
        r.retx = pkt->GetRetransmissions();
    }
    w->Dispose();
    Simulator::Destroy();
    return r;
}

} // namespace

int
main(int argc, char** argv)
{
    std::string ccs = "NewReno,Cubic,Dctcp,Bbr";
    std::string queues = "fifo,red-ecn,step-ecn";
    std::string bytes = "8M";
    std::string incast = "4M";
    double gbps = 100;
    double sampleUs = 5;
    std::string csv = "cc-study.csv";
    std::string seriesCsv = "cc-study-series.csv";
    CommandLine cmd(__FILE__);
    cmd.AddValue("ccs", "TCP congestion controls, comma separated", ccs);
    cmd.AddValue("queues", "switch queue discs, comma separated", queues);
    cmd.AddValue("bytes", "collective size (K/M/G suffixes)", bytes);
    cmd.AddValue("incast", "background incast bytes per sender", incast);
    cmd.AddValue("gbps", "NIC and fabric link rate (Gbit/s)", gbps);
    cmd.AddValue("sampleUs", "queue sampling period (us)", sampleUs);
    cmd.AddValue("csv", "per-run results", csv);
    cmd.AddValue("series", "queue occupancy time series", seriesCsv);
    cmd.Parse(argc, argv);

    Scenario sc;
    sc.spec.servers = 8;
    sc.spec.gpusPerServer = 1;
    sc.spec.nicsPerServer = 1;
    sc.spec.nicGbps = gbps;
    sc.spec.fabric = "leaf-spine";
    sc.spec.nicsPerLeaf = 4;
    sc.spec.oversubscription = 2;
    sc.incastBytes = gpusim::ParseByteSize(incast);
    sc.sample = MicroSeconds(sampleUs);
    const uint64_t size = gpusim::ParseByteSize(bytes);

    std::ofstream series(seriesCsv);
    series << "run,queue_link,t_us,backlog_bytes\n";
    std::vector<Row> rows;
    for (CollKind kind : {CollKind::AllReduce, CollKind::AllToAll})
    {
        sc.kind = kind;
        sc.bytes = size / (4 * 8) * (4 * 8); // whole float blocks per rank
        const std::string coll = gpusim::ToString(kind);
        Row ref = RunOne(sc, CreateObject<FlowBackend>(), nullptr, coll + "/flow");
        ref.collective = coll;
        ref.cc = "(flow)";
        ref.queue = "-";
        rows.push_back(ref);
        for (const std::string& cc : Split(ccs))
        {
            for (const std::string& q : Split(queues))
            {
                Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
                tcp->SetCongestionControl(cc);
                Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
                pkt->SetTransport(tcp);
                pkt->SetAttribute("QueueDisc", StringValue(q));
                pkt->SetAttribute("SampleInterval", TimeValue(sc.sample));
                const std::string label = coll + "/" + cc + "/" + q;
                Row r = RunOne(sc, pkt, &series, label);
                r.collective = coll;
                r.cc = cc;
                r.queue = q;
                rows.push_back(r);
            }
        }
    }

    std::cout << "# " << size << " B collectives, 8 x 1 GPU, leaf-spine 2:1 at " << gbps
              << " Gbit/s, background incast 3 x " << sc.incastBytes << " B into GPU 0\n";
    std::cout << "collective     cc        queue      time_us  q_p50_KB  q_p99_KB    marks   "
                 "drops   retx\n";
    std::ofstream out(csv);
    out << "collective,cc,queue,completed,time_us,queue_p50_kb,queue_p99_kb,ecn_marks,drops,"
           "retransmissions\n";
    for (const Row& r : rows)
    {
        char line[256];
        std::snprintf(line,
                      sizeof(line),
                      "%-13s  %-8s  %-8s  %9.1f  %8.1f  %8.1f  %7llu  %6llu  %5llu%s\n",
                      r.collective.c_str(), r.cc.c_str(), r.queue.c_str(), r.timeUs, r.p50KB,
                      r.p99KB, (unsigned long long)r.marks, (unsigned long long)r.drops,
                      (unsigned long long)r.retx, r.completed ? "" : "  (did not complete)");
        std::cout << line;
        out << r.collective << "," << r.cc << "," << r.queue << "," << (r.completed ? 1 : 0)
            << "," << r.timeUs << "," << r.p50KB << "," << r.p99KB << "," << r.marks << ","
            << r.drops << "," << r.retx << "\n";
    }
    std::cout << "# wrote " << csv << " and " << seriesCsv << "\n";
    return 0;
}
