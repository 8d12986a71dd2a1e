/*
 * Kineto reader throughput. For each trace (default: the largest shared trace) it loads the
 * text once, then times parsing and parsing + graph build + conversion several times and
 * prints the median throughput in MB/s of uncompressed JSON. With --replay it also prints the
 * quick-replay error per ProfilerStep.
 *
 *   gpusim-bench-kineto-parse [--reps N] [--replay] [trace.json(.gz) ...]
 */
#include "ns3/kineto-quick-replay.h"
#include "ns3/kineto-trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace ns3::gpusim;

namespace
{

double
Median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

double
Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

} // namespace

int
main(int argc, char** argv)
{
    int reps = 7;
    bool replay = false;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i)
    {
        if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
        {
            reps = std::max(1, std::atoi(argv[++i]));
        }
        else if (!std::strcmp(argv[i], "--replay"))
        {
            replay = true;
        }
        else
        {
            files.emplace_back(argv[i]);
        }
    }
    if (files.empty())
    {
        files.emplace_back(GPUSIM_SHARED_DIR
                           "/data/kineto/tracelens_mi300__resnet_act_checkpoint.json.gz");
    }
    for (const auto& file : files)
    {
        try
        {
            auto t0 = std::chrono::steady_clock::now();
            std::string text = LoadKinetoText(file);
            auto t1 = std::chrono::steady_clock::now();
            double mb = static_cast<double>(text.size()) / 1e6;
            std::vector<double> parse;
            std::vector<double> full;
            KinetoTrace trace;
            for (int r = 0; r < reps; ++r)
            {
                auto a = std::chrono::steady_clock::now();
                trace = ParseKinetoJson(text, file);
                auto b = std::chrono::steady_clock::now();
                KinetoGraph graph = BuildKinetoGraph(trace);
                RankTrace rank = KinetoToRankTrace(trace, graph);
                auto c = std::chrono::steady_clock::now();
                parse.push_back(Seconds(a, b));
                full.push_back(Seconds(a, c));
            }
            std::printf("%s\n  %.1f MB JSON, %zu events kept; gunzip %.1f MB/s; parse %.1f MB/s "
                        "(median of %d); parse+graph+convert %.1f MB/s\n",
                        file.c_str(),
                        mb,
                        trace.events.size(),
                        mb / Seconds(t0, t1),
                        mb / Median(parse),
                        reps,
                        mb / Median(full));
            if (replay)
            {
                KinetoGraph graph = BuildKinetoGraph(trace);
                RankTrace rank = KinetoToRankTrace(trace, graph);
                QuickReplayResult res = ReplayRecordedDurations(rank);
                const auto& c = graph.counts;
                std::printf("  deps: cpu_cpu %llu (inter-thread %llu) cpu_gpu %llu gpu_cpu %llu "
                            "gpu_gpu %llu (cross-stream %llu, %s); %zu ops; replay %s\n",
                            (unsigned long long)c.cpuCpu,
                            (unsigned long long)c.interThread,
                            (unsigned long long)c.cpuGpu,
                            (unsigned long long)c.gpuCpu,
                            (unsigned long long)c.gpuGpu,
                            (unsigned long long)c.crossStream,
                            ToString(graph.crossStreamMethod),
                            rank.ops.size(),
                            res.complete ? "complete" : res.stuck.c_str());
                for (const auto& it : res.iterations)
                {
                    std::printf("  %-20s recorded %12.1f us  replayed %12.1f us  error %+6.2f %%\n",
                                it.name.c_str(),
                                it.recordedUs,
                                it.simulatedUs,
                                it.ErrorPct());
                }
            }
        }
        catch (const std::exception& e)
        {
            std::printf("%s\n  error: %s\n", file.c_str(), e.what());
            return 1;
        }
    }
    return 0;
}
