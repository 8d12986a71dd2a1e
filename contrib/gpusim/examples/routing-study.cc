/*
 * Routing study (doc/routing-study.md): how per-flow ECMP, packet spraying (random and
 * round-robin), flowlet switching and adaptive routing change collective completion times on
 * a small 2:1 leaf-spine, alone and next to a second job, under RoCEv2 with DCQCN or HPCC and a
 * go-back-N or reorder-tolerant receiver; and what a failed spine cable or spine costs a
 * training iteration under ECMP and adaptive routing. Scenarios: examples/routing-study.h.
 *
 *   gpusim-routing-study --part=collectives --csv=routing-study-collectives.csv
 *   gpusim-routing-study --part=training --trainingCsv=routing-study-training.csv
 *
 * Part "collectives": one row per (collective, alone/shared, routing, cc, receiver, seed) on
 * the packet backend, plus the flow backend's prediction per routing model (ecmp: its own
 * hash; spray: transfers split over the 4 spines; adaptive: the spines merged into one bundle).
 * Part "training": one row per (routing, failure case).
 */
#include "routing-study.h"

#include "ns3/byte-size.h"
#include "ns3/command-line.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace ns3;
using namespace ns3::routingstudy;

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

void
CollectivesPart(const std::string& collectives,
                const std::string& sharings,
                const std::string& routings,
                const std::string& ccs,
                const std::string& reorders,
                const std::string& seeds,
                uint64_t bytes,
                const std::string& csv)
{
    std::ofstream out(csv);
    out << "collective,sharing,backend,routing,cc,receiver,seed,completed,time_us,other_us,"
           "retransmitted,nacks,out_of_order,reordered,timeouts,drops,pauses,cnps,"
           "uplink_imbalance\n";
    std::printf("# %llu B per rank, 8 ranks per job; 8 servers x 2 GPUs, 100 Gbit/s NICs, "
                "2 leaves x 4 spines (2:1); RoCEv2, ecn queues, PFC on\n",
                (unsigned long long)bytes);
    std::printf("%-9s %-6s %-6s %-9s %-6s %-8s %4s %10s %10s %7s %6s %7s %7s %6s %5s\n",
                "coll", "share", "backend", "routing", "cc", "receiver", "seed", "time_us",
                "other_us", "retx", "nacks", "ooo", "held", "t/o", "imbal");
    auto emit = [&out](const CollectiveCase& c, const CollectiveResult& r) {
        const std::string cc = c.backend == "flow" ? "-" : c.cc;
        const std::string rcv = c.backend == "flow" ? "-" : c.reorder;
        std::printf("%-9s %-6s %-6s %-9s %-6s %-8s %4u %10.1f %10.1f %7llu %6llu %7llu %7llu "
                    "%6llu %5.2f%s\n",
                    c.collective.c_str(), c.shared ? "shared" : "alone", c.backend.c_str(),
                    c.routing.c_str(), cc.c_str(), rcv.c_str(), c.seed, r.timeUs, r.otherUs,
                    (unsigned long long)r.retransmitted, (unsigned long long)r.nacks,
                    (unsigned long long)r.outOfOrder, (unsigned long long)r.reordered,
                    (unsigned long long)r.timeouts, r.uplinkImbalance,
                    r.completed ? "" : "  (did not complete)");
        std::fflush(stdout);
        out << c.collective << "," << (c.shared ? "shared" : "alone") << "," << c.backend << ","
            << c.routing << "," << cc << "," << rcv << "," << c.seed << ","
            << (r.completed ? 1 : 0) << "," << r.timeUs << "," << r.otherUs << ","
            << r.retransmitted << "," << r.nacks << "," << r.outOfOrder << "," << r.reordered
            << "," << r.timeouts << "," << r.drops << "," << r.pauses << "," << r.cnps << ","
            << r.uplinkImbalance << "\n";
    };
    for (const std::string& coll : Split(collectives))
    {
        for (const std::string& sharing : Split(sharings))
        {
            CollectiveCase c;
            c.collective = coll;
            c.shared = sharing == "shared";
            c.bytes = bytes;
            // The flow backend's predictions: one per routing model it has.
            c.backend = "flow";
            for (const std::string routing : {"ecmp", "spray", "adaptive"})
            {
                c.routing = routing;
                emit(c, RunCollective(c));
            }
            c.backend = "packet";
            for (const std::string& routing : Split(routings))
            {
                for (const std::string& cc : Split(ccs))
                {
                    for (const std::string& reorder : Split(reorders))
                    {
                        for (const std::string& seed : Split(seeds))
                        {
                            c.routing = routing;
                            c.cc = cc;
                            c.reorder = reorder;
                            c.seed = std::stoul(seed);
                            emit(c, RunCollective(c));
                        }
                    }
                }
            }
        }
    }
    std::printf("# wrote %s\n", csv.c_str());
}

std::string
TimeText(Time t)
{
    std::ostringstream os;
    if (t.IsZero())
    {
        os << "0";
    }
    else if (t.GetNanoSeconds() % 1000000 == 0)
    {
        os << t.GetNanoSeconds() / 1000000 << "ms";
    }
    else
    {
        os << t.GetNanoSeconds() / 1e3 << "us";
    }
    return os.str();
}

void
TrainingPart(const std::string& oversubs,
             uint32_t layers,
             uint32_t globalBatch,
             const std::string& convergences,
             double failAtUs,
             const std::string& csv)
{
    const gpusim::ModelSpec m = StudyModel(layers);
    auto job = StudyTraining(m, globalBatch);
    std::ofstream out(csv);
    out << "spines,routing,case,target,fail_at_us,convergence_us,completed,iteration_us,"
           "exposed_comm_us,slowdown_pct\n";
    std::printf("# training: %s (%u layers), TP 2 x DP 8 on 16 GPUs placed spread, global batch "
                "%u; flow backend, chunk level; 8 servers x 2 GPUs, 100 Gbit/s, 2 leaves\n",
                m.name.c_str(), layers, globalBatch);
    std::printf("%-6s %-9s %-25s %-13s %10s %6s %13s %12s %9s\n", "spines", "routing", "case",
                "target", "fail_us", "conv", "iteration_us", "exposed_us", "slowdown");
    for (const std::string& ov : Split(oversubs))
    {
        const double oversub = std::stod(ov);
        const uint32_t spines = uint32_t(8 / oversub);
        // The intact ECMP iteration: its length places the mid-iteration failure, and its
        // busiest leaf0 uplink is the cable that fails (the one ECMP hashed the most onto).
        const TrainingResult ecmpIntact =
            RunTraining(job, TrainingCase{"ecmp", oversub, {}, Time(0)});
        std::string spine = "spine0";
        double most = -1;
        for (size_t i = 0; i < ecmpIntact.uplinkBytes.size(); ++i)
        {
            const std::string& name = ecmpIntact.uplinkNames[i];
            if (name.rfind("leaf0-", 0) == 0 && ecmpIntact.uplinkBytes[i] > most)
            {
                most = ecmpIntact.uplinkBytes[i];
                spine = name.substr(6);
            }
        }
        const double failAt = failAtUs >= 0 ? failAtUs : std::floor(ecmpIntact.iterationUs / 2);
        const std::string at = TimeText(MicroSeconds(int64_t(failAt)));
        for (const std::string routing : {"ecmp", "adaptive"})
        {
            struct Case
            {
                std::string name;
                std::string target;
                std::string when;
                Time convergence;
            };
            std::vector<Case> cases = {{"intact", "", "", Time(0)},
                                       {"cable down at 0", "leaf0-" + spine, "0", Time(0)},
                                       {"spine down at 0", spine, "0", Time(0)}};
            for (const std::string& conv : Split(convergences))
            {
                const Time cv = conv == "0" ? Time(0) : gpusim::ParseEventTime(conv, "convergence");
                cases.push_back(
                    {"cable down mid (conv " + conv + ")", "leaf0-" + spine, at, cv});
            }
            for (const std::string& conv : Split(convergences))
            {
                const Time cv = conv == "0" ? Time(0) : gpusim::ParseEventTime(conv, "convergence");
                cases.push_back({"spine down mid (conv " + conv + ")", spine, at, cv});
            }
            double intactUs = 0;
            for (const Case& k : cases)
            {
                TrainingCase tc;
                tc.routing = routing;
                tc.oversubscription = oversub;
                tc.convergence = k.convergence;
                if (!k.target.empty())
                {
                    tc.linkDown.push_back(k.target + "@" + k.when);
                }
                const TrainingResult r = routing == "ecmp" && k.target.empty()
                                             ? ecmpIntact
                                             : RunTraining(job, tc);
                if (k.target.empty())
                {
                    intactUs = r.iterationUs;
                }
                const double slow = intactUs > 0 ? (r.iterationUs / intactUs - 1) * 100 : 0;
                const double failUs = k.when == "0" ? 0 : (k.when.empty() ? -1 : failAt);
                std::printf("%-6u %-9s %-25s %-13s %10.0f %6s %13.1f %12.1f %8.1f%%%s\n",
                            spines, routing.c_str(), k.name.c_str(),
                            k.target.empty() ? "-" : k.target.c_str(), failUs,
                            TimeText(k.convergence).c_str(), r.iterationUs, r.exposedCommUs, slow,
                            r.completed ? "" : "  (did not complete)");
                std::fflush(stdout);
                out << spines << "," << routing << "," << k.name << "," << (k.target.empty() ? "-" : k.target) << ","
                    << failUs << "," << k.convergence.GetNanoSeconds() / 1e3 << ","
                    << (r.completed ? 1 : 0) << "," << r.iterationUs << "," << r.exposedCommUs
                    << "," << slow << "\n";
            }
        }
    }
    std::printf("# wrote %s\n", csv.c_str());
}

} // namespace

int
main(int argc, char** argv)
{
    std::string part = "all";
    std::string collectives = "allreduce,alltoall";
    std::string sharings = "alone,shared";
    std::string routings = "ecmp,spray,spray-rr,flowlet,adaptive";
    std::string ccs = "dcqcn,hpcc";
    std::string reorders = "gbn,tolerant";
    std::string seeds = "0";
    std::string bytes = "4M";
    std::string csv = "routing-study-collectives.csv";
    std::string oversubs = "2,4";
    uint32_t layers = 8;
    uint32_t globalBatch = 64;
    std::string convergences = "0,1ms,50ms";
    double failAtUs = -1;
    std::string trainingCsv = "routing-study-training.csv";
    CommandLine cmd(__FILE__);
    cmd.AddValue("part", "collectives, training or all", part);
    cmd.AddValue("collectives", "allreduce,alltoall", collectives);
    cmd.AddValue("sharing", "alone,shared (job B on the other GPUs)", sharings);
    cmd.AddValue("routings", "packet routing modes, comma separated", routings);
    cmd.AddValue("ccs", "RDMA congestion controls, comma separated", ccs);
    cmd.AddValue("receivers", "RDMA receivers: gbn,tolerant", reorders);
    cmd.AddValue("seeds", "EcmpSeed values, comma separated (one row each)", seeds);
    cmd.AddValue("bytes", "collective size per rank (K/M/G suffixes)", bytes);
    cmd.AddValue("csv", "collectives part: per-run results", csv);
    cmd.AddValue("oversubscription", "training part: leaf oversubscriptions (2: 4 spines, "
                                     "4: 2 spines)", oversubs);
    cmd.AddValue("layers", "training part: model layers", layers);
    cmd.AddValue("globalBatch", "training part: sequences per iteration", globalBatch);
    cmd.AddValue("convergences", "training part: routing convergence delays", convergences);
    cmd.AddValue("failAtUs", "training part: mid-iteration failure time (-1: half the intact "
                             "ECMP iteration)", failAtUs);
    cmd.AddValue("trainingCsv", "training part: per-case results", trainingCsv);
    cmd.Parse(argc, argv);
    if (part != "all" && part != "collectives" && part != "training")
    {
        std::cerr << "--part must be collectives, training or all\n";
        return 1;
    }
    if (part != "training")
    {
        CollectivesPart(collectives, sharings, routings, ccs, reorders, seeds,
                        gpusim::ParseByteSize(bytes), csv);
    }
    if (part != "collectives")
    {
        TrainingPart(oversubs, layers, globalBatch, convergences, failAtUs, trainingCsv);
    }
    return 0;
}
