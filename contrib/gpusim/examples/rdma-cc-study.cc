/*
 * RDMA congestion-control study on the packet backend (the RDMA sibling of
 * collective-cc-study): a ring AllReduce, an AllToAll and a pure incast on a 2:1
 * oversubscribed leaf-spine (8 servers x 1 GPU, 4 per leaf, 2 spines); during the
 * collectives three GPUs of the other leaf push a background incast into GPU 0. Every
 * (RDMA congestion control, PFC on/off) pair runs the same scenario on the RoCEv2 transport
 * with the ecn queue disc; the flow backend runs it once as the fluid reference. Prints a
 * table and writes a CSV of the runs and one of the hottest switch queue's occupancy.
 *
 *   gpusim-rdma-cc-study --ccs=none,dcqcn,hpcc,timely,dctcp --pfc=0,1 --bytes=8M \
 *       --incast=4M --gbps=100 --csv=rdma-study.csv --series=rdma-study-series.csv
 */
#include "ns3/boolean.h"
#include "ns3/byte-size.h"
#include "ns3/cluster-spec.h"
#include "ns3/command-line.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/packet-backend.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace ns3;
using gpusim::CollKind;

namespace
{

bool g_details = false; //!< --details: per-port drops and pauses on stderr

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
    std::string workload;
    std::string cc;
    bool pfc = false;
    double timeUs = 0;
    double p50KB = 0;
    double p99KB = 0;
    uint64_t marks = 0;
    uint64_t cnps = 0;
    uint64_t drops = 0;
    uint64_t retx = 0;
    uint64_t pauses = 0;
    double pausedUs = 0; //!< summed over all paused ports
    bool completed = false;
};

struct Scenario
{
    gpusim::ClusterSpec spec;
    std::string workload; //!< AllReduce, AllToAll or Incast
    uint64_t bytes = 0;
    uint64_t incastBytes = 0;
    Time sample;
};

void
FillNetworkStats(Ptr<PacketBackend> pkt, Row& r, std::ostream* series, const std::string& label)
{
    const uint32_t hot = pkt->GetHottestQueueLink();
    if (hot != UINT32_MAX)
    {
        r.p50KB = pkt->GetBacklogQuantile(hot, 0.5) / 1e3;
        r.p99KB = pkt->GetBacklogQuantile(hot, 0.99) / 1e3;
        const auto& t = pkt->GetSampleTimes();
        const auto b = pkt->GetBacklogSeries(hot);
        const auto& L = pkt->GetTopology()->Links()[hot];
        const auto& V = pkt->GetTopology()->Vertices();
        for (size_t i = 0; series && i < t.size(); ++i)
        {
            *series << label << "," << V[L.from].name << "->" << V[L.to].name << ","
                    << t[i].GetNanoSeconds() / 1e3 << "," << b[i] << "\n";
        }
    }
    r.marks = pkt->GetTotalMarks();
    r.drops = pkt->GetTotalDrops();
    r.retx = pkt->GetRetransmissions();
    r.pauses = pkt->GetTotalPauses();
    for (const auto& s : pkt->GetLinkStats())
    {
        r.pausedUs += s.pausedUs;
        if (g_details && (s.drops > 0 || s.pausesSent > 0 || s.pausesReceived > 0))
        {
            std::cerr << label << ": " << s.from << "->" << s.to << " drops " << s.drops
                      << " (lossless " << s.losslessDrops << "), pauses sent " << s.pausesSent
                      << ", received " << s.pausesReceived << ", paused " << s.pausedUs
                      << " us\n";
        }
    }
    if (auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport()))
    {
        r.cnps = rdma->GetCounters().cnpPackets;
    }
}

/// Runs one workload (plus the background incast for the collectives); fills the row.
Row
RunOne(const Scenario& sc, Ptr<NetworkBackend> net, std::ostream* series, const std::string& label)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(sc.spec);
    NodeContainer gpus = cluster.Create();
    net->SetTopology(cluster.GetTopology());
    const uint32_t n = gpus.GetN();
    Ptr<GpuWorkload> w;
    uint32_t incastDone = 0;
    const uint32_t incastSenders = sc.workload == "Incast" ? 4 : 3;
    if (sc.workload != "Incast")
    {
        JobBuilder job(n);
        const CollKind kind = sc.workload == "AllReduce" ? CollKind::AllReduce
                                                         : CollKind::AllToAll;
        job.AllRanks().CommInit("c").Collective(1, kind, "c", sc.bytes, gpusim::DataType::F32,
                                                0);
        job.SyncStream(1);
        GpuWorkloadHelper h;
        h.SetBackend(net);
        h.SetNcclAttribute("Algorithm", StringValue("ring"));
        w = h.Install(job.BuildShared(), gpus);
    }
    Time incastEnd;
    for (uint32_t s = n - incastSenders; s < n; ++s)
    {
        net->StartTransfer((1ull << 40) + s, s, 0, sc.incastBytes, 1000,
                           [&](const TransferRecord& t) {
                               ++incastDone;
                               incastEnd = std::max(incastEnd, t.delivered);
                           });
    }
    Simulator::Stop(Seconds(1)); // a lossy run that gives up must not hang the study
    Simulator::Run();
    Row r;
    if (w)
    {
        RunReport rep = w->Check();
        r.completed = rep.completed && !w->GetCollectives().empty();
        if (r.completed)
        {
            const CollectiveRecord& c = w->GetCollectives().at(0);
            r.timeUs = (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3;
        }
        w->Dispose();
    }
    else
    {
        r.completed = incastDone == incastSenders;
        r.timeUs = incastEnd.GetNanoSeconds() / 1e3;
    }
    if (!r.completed)
    {
        std::cerr << label << ": did not complete\n";
    }
    if (auto pkt = DynamicCast<PacketBackend>(net))
    {
        FillNetworkStats(pkt, r, series, label);
    }
    Simulator::Destroy();
    return r;
}

void
PrintRows(const std::vector<Row>& rows, const std::string& csv)
{
    std::cout << "workload   cc      pfc   time_us  q_p50_KB  q_p99_KB   marks    cnps   drops"
                 "    retx  pauses  paused_us\n";
    std::ofstream out(csv);
    out << "workload,cc,pfc,completed,time_us,queue_p50_kb,queue_p99_kb,ecn_marks,cnps,drops,"
           "retransmissions,pauses,paused_us\n";
    for (const Row& r : rows)
    {
        char line[256];
        std::snprintf(line, sizeof(line),
                      "%-9s  %-6s  %-3s  %8.1f  %8.1f  %8.1f  %6llu  %6llu  %6llu  %6llu  %6llu"
                      "  %9.1f%s\n",
                      r.workload.c_str(), r.cc.c_str(), r.pfc ? "on" : "off", r.timeUs, r.p50KB,
                      r.p99KB, (unsigned long long)r.marks, (unsigned long long)r.cnps,
                      (unsigned long long)r.drops, (unsigned long long)r.retx,
                      (unsigned long long)r.pauses, r.pausedUs,
                      r.completed ? "" : "  (did not complete)");
        std::cout << line;
        out << r.workload << "," << r.cc << "," << (r.pfc ? 1 : 0) << "," << (r.completed ? 1 : 0)
            << "," << r.timeUs << "," << r.p50KB << "," << r.p99KB << "," << r.marks << ","
            << r.cnps << "," << r.drops << "," << r.retx << "," << r.pauses << ","
            << r.pausedUs << "\n";
    }
}

} // namespace

int
main(int argc, char** argv)
{
    std::string ccs = "none,dcqcn,hpcc,timely,dctcp";
    std::string pfcs = "0,1";
    std::string bytes = "8M";
    std::string incast = "4M";
    double gbps = 100;
    double sampleUs = 5;
    std::string csv = "rdma-study.csv";
    std::string seriesCsv = "rdma-study-series.csv";
    CommandLine cmd(__FILE__);
    cmd.AddValue("ccs", "RDMA congestion controls, comma separated", ccs);
    cmd.AddValue("pfc", "PFC settings to run, comma separated 0/1", pfcs);
    cmd.AddValue("bytes", "collective size (K/M/G suffixes)", bytes);
    cmd.AddValue("incast", "incast bytes per sender", incast);
    cmd.AddValue("gbps", "NIC and fabric link rate (Gbit/s)", gbps);
    cmd.AddValue("sampleUs", "queue sampling period (us)", sampleUs);
    cmd.AddValue("csv", "per-run results", csv);
    cmd.AddValue("series", "hottest queue occupancy time series", seriesCsv);
    cmd.AddValue("details", "print per-port drops and pauses of every run", g_details);
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
    sc.bytes = gpusim::ParseByteSize(bytes) / (4 * 8) * (4 * 8); // whole float blocks per rank

    std::ofstream series(seriesCsv);
    series << "run,queue_link,t_us,backlog_bytes\n";
    std::vector<Row> rows;
    for (const std::string workload : {"AllReduce", "AllToAll", "Incast"})
    {
        sc.workload = workload;
        Row ref = RunOne(sc, CreateObject<FlowBackend>(), nullptr, workload + "/flow");
        ref.workload = workload;
        ref.cc = "(flow)";
        rows.push_back(ref);
        for (const std::string& cc : Split(ccs))
        {
            for (const std::string& p : Split(pfcs))
            {
                Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
                rdma->SetCongestionControl(cc);
                Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
                pkt->SetTransport(rdma);
                pkt->SetAttribute("QueueDisc", StringValue("ecn"));
                pkt->SetAttribute("Pfc", BooleanValue(p == "1"));
                pkt->SetAttribute("SampleInterval", TimeValue(sc.sample));
                const std::string label = workload + "/" + cc + "/pfc" + p;
                Row r = RunOne(sc, pkt, &series, label);
                r.workload = workload;
                r.cc = cc;
                r.pfc = p == "1";
                rows.push_back(r);
            }
        }
    }
    std::cout << "# " << sc.bytes << " B collectives, 8 x 1 GPU, leaf-spine 2:1 at " << gbps
              << " Gbit/s, incast " << sc.incastBytes << " B per sender into GPU 0 (3 senders "
              << "beside the collectives, 4 alone), RoCEv2 with the ecn queue disc\n";
    PrintRows(rows, csv);
    std::cout << "# wrote " << csv << " and " << seriesCsv << "\n";
    return 0;
}
