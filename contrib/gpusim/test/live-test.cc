// Live mode (gpusim run): unmodified programs on the shim, their own timers reading simulated
// time; the live run equals `gpusim simulate` of its own recording; failures end quickly.
// The programs are the shim's test programs (shim/test/live_perf.cc, train.cc); the suite
// skips when the shim is not built.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <poll.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{

const std::string kGpusim = std::string(GPUSIM_BIN_DIR) + "/gpusim";
const std::string kPerf = GPUSIM_SHIM_TEST_DIR "/shim_live_perf";
const std::string kTrain = GPUSIM_SHIM_TEST_DIR "/shim_train";
const std::string kThreads = GPUSIM_SHIM_TEST_DIR "/shim_live_threads";
const std::string kRogue = GPUSIM_SHIM_TEST_DIR "/shim_live_rogue";
const std::string kCopies = GPUSIM_SHIM_TEST_DIR "/shim_live_copies";
const std::string kGpt = GPUSIM_SHIM_TEST_DIR "/shim_gpt_train";
const std::string kMpiTrain = GPUSIM_SHIM_TEST_DIR "/shim_mpi_train";

bool
Exists(const std::string& p)
{
    struct stat st;
    return ::stat(p.c_str(), &st) == 0;
}

std::string
ReadFile(const std::string& p)
{
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

/// cpu_us of every op named `op` ("kernel", ...) in a rank file of a trace directory.
std::vector<double>
CpuUsOf(const std::string& rankFile, const std::string& op)
{
    std::vector<double> v;
    std::istringstream in(ReadFile(rankFile));
    std::string line;
    const std::string tag = "\"op\":\"" + op + "\"";
    while (std::getline(in, line))
    {
        const size_t at = line.find("\"cpu_us\":");
        if (line.find(tag) != std::string::npos && at != std::string::npos)
        {
            v.push_back(std::stod(line.substr(at + 9)));
        }
    }
    return v;
}

/// "average step X ms" that gpt_train prints.
double
AverageStepMs(const std::string& out)
{
    const size_t at = out.find("average step ");
    return at == std::string::npos ? -1 : std::stod(out.substr(at + 13));
}

struct Result
{
    int code = -1;
    std::string out;
    std::string err;
    double wallS = 0;
};

/// A temporary directory removed at the end of the test.
class TempDir
{
  public:
    TempDir()
    {
        char t[] = "/tmp/gpusim-live-test-XXXXXX";
        m_path = ::mkdtemp(t);
    }
    ~TempDir()
    {
        std::string cmd = "rm -rf '" + m_path + "'";
        if (std::system(cmd.c_str()) != 0)
        {
            std::fprintf(stderr, "could not remove %s\n", m_path.c_str());
        }
    }
    const std::string& Path() const
    {
        return m_path;
    }

  private:
    std::string m_path;
};

/// Runs a shell command, stdout and stderr to files.
Result
Shell(const TempDir& dir, const std::string& cmd)
{
    const std::string out = dir.Path() + "/stdout";
    const std::string err = dir.Path() + "/stderr";
    auto t0 = std::chrono::steady_clock::now();
    int status = std::system((cmd + " >" + out + " 2>" + err).c_str());
    Result r;
    r.wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadFile(out);
    r.err = ReadFile(err);
    return r;
}

/// The gpusim program with `args`.
Result
Cli(const TempDir& dir, const std::string& args)
{
    return Shell(dir, kGpusim + " " + args);
}

/// "size host_us event_us ..." rows of live_perf's allreduce table.
struct Row
{
    double bytes, hostUs, eventUs;
};

std::vector<Row>
Rows(const std::string& out)
{
    std::vector<Row> rows;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line))
    {
        Row r;
        if (!line.empty() && line[0] != '#' &&
            std::sscanf(line.c_str(), "%lf %lf %lf", &r.bytes, &r.hostUs, &r.eventUs) == 3)
        {
            rows.push_back(r);
        }
    }
    return rows;
}

/// time_us per size of `gpusim collective`.
std::vector<Row>
CollectiveRows(const std::string& out)
{
    std::vector<Row> rows;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line))
    {
        if (line.empty() || line[0] == '#')
        {
            continue;
        }
        std::istringstream f(line);
        std::vector<std::string> cols;
        std::string c;
        while (f >> c)
        {
            cols.push_back(c);
        }
        if (cols.size() >= 11)
        {
            rows.push_back({std::stod(cols[0]), std::stod(cols[8]), std::stod(cols[8])});
        }
    }
    return rows;
}

#define REQUIRE_SHIM()                                                                             \
    do                                                                                             \
    {                                                                                              \
        if (!Exists(kPerf) || !Exists(kTrain))                                                     \
        {                                                                                          \
            GTEST_SKIP() << "the shim's test programs are not built (" << kPerf << ")";           \
        }                                                                                          \
    } while (0)

} // namespace

// A sleep takes its time on the program's clock: 250 ms of std::this_thread::sleep_for read by
// steady_clock around it are 250 ms (plus the clock read's cost), with every host-time mode.
TEST(LiveHostTime, SleepsTakeTheirTimeOnTheProgramsClock)
{
    REQUIRE_SHIM();
    TempDir d;
    for (const char* mode : {"api-only", "measured"})
    {
        SCOPED_TRACE(mode);
        Result r = Shell(d,
                         kGpusim + " run --gpus 1 --host-time " + mode + " -- " + kPerf +
                             " --mode nap -n 250");
        ASSERT_EQ(r.code, 0) << r.err;
        double us = -1;
        ASSERT_EQ(std::sscanf(r.out.c_str(), "nap host_us %lf", &us), 1) << r.out;
        EXPECT_GE(us, 250000.0) << r.out;
        EXPECT_LT(us, 250000.0 + 100.0) << r.out;
        if (std::string(mode) == "api-only")
        {
            EXPECT_NEAR(us, 250000.08, 0.001)
                << r.out; // + the nanosleep call 0.05, a clock read 0.03
        }
    }
}

// The program's own timers (steady_clock around the loop, CUDA events) read simulated time:
// 10 SGEMMs of 4096^3 on H100 cost 2 * 4096^3 / (67 TFLOP/s * 0.7) each by the roofline
// model's documented constants (FP32 non-tensor peak, ComputeEfficiency default).
TEST(Live, ProgramTimersReadSimulatedTime)
{
    REQUIRE_SHIM();
    TempDir d;
    Result r = Shell(d, kGpusim + " run --gpus 1 --host-time fixed:1 -- " + kPerf + " --mode gemm -n 10");
    ASSERT_EQ(r.code, 0) << r.err;
    double hostUs = 0, eventUs = 0;
    ASSERT_EQ(std::sscanf(r.out.c_str(), "gemm x10 host_us %lf event_us %lf", &hostUs, &eventUs), 2)
        << r.out;
    const double expectUs = 10 * 2.0 * 4096.0 * 4096.0 * 4096.0 / (67e12 * 0.7) * 1e6;
    EXPECT_NEAR(eventUs, expectUs, 0.001 * expectUs);
    // The host clock also saw the launch costs: one microsecond per API call in between.
    EXPECT_GT(hostUs, eventUs);
    EXPECT_LT(hostUs - eventUs, 20.0);
    // ... and none of it is the real time the emulation took (a few milliseconds at most).
    EXPECT_LT(r.wallS * 1e6, hostUs * 100);
}

// nccl-tests-style AllReduce on one 8-GPU H100 server under default options (measured host
// time): per size the program's own measurement is the simulated collective (`gpusim
// collective` for the same cluster, a second path through the engine). With one process per
// GPU (as the published nccl-tests runs) that holds from 1 MiB up; one process driving all
// eight GPUs launches NCCL's eight kernels one after the other (8 x 4.9 us of host time per
// iteration, doc/live-mode.md), so small sizes wait for the host, as real `-g 8` runs do.
TEST(LiveHostTime, AllReduceLoopMatchesCollectiveSweep)
{
    REQUIRE_SHIM();
    TempDir d;
    Result ref = Shell(d,
                       kGpusim + " collective --servers 1 --min-bytes 1M --max-bytes 256M "
                                 "--step-factor 4 --quiet");
    ASSERT_EQ(ref.code, 0) << ref.err;
    auto b = CollectiveRows(ref.out);
    ASSERT_EQ(b.size(), 5u) << ref.out;
    // ncclGroupStart/End + per GPU nccl_enqueue and nccl_launch (the host cost table).
    const double hostPerIterationUs = 0.1 + 8 * (0.5 + 4.4);
    for (const char* layout : {"--nproc-per-node 8 -- ", "--nproc-per-node 1 -- "})
    {
        SCOPED_TRACE(layout);
        const bool onePerGpu = std::string(layout).find(" 8 ") != std::string::npos;
        Result live =
            Shell(d,
                  kGpusim + " run --servers 1 --gpus 8 " + layout + kPerf +
                      (onePerGpu ? " -g 1" : " -g 8") + " -b 1M -e 256M -f 4 -n 50 -w 5 --poll");
        ASSERT_EQ(live.code, 0) << live.err;
        auto a = Rows(live.out);
        ASSERT_EQ(a.size(), 5u) << live.out;
        for (size_t i = 0; i < a.size(); ++i)
        {
            SCOPED_TRACE("size " + std::to_string(a[i].bytes));
            EXPECT_EQ(a[i].bytes, b[i].bytes);
            EXPECT_GE(a[i].hostUs, a[i].eventUs);
            const bool hostBound = !onePerGpu && hostPerIterationUs > 0.9 * b[i].hostUs;
            const double expect = hostBound ? hostPerIterationUs : b[i].hostUs;
            // Measured host time adds the program's own (small) work between calls, and the
            // last poll of an iteration lands up to one poll late: a poll's measured CPU time
            // grows when a loaded `ctest -j2` switches the process out (2.5 % seen quiet at
            // 1 MiB, over 5 % once under load). Host-bound, the program's own instructions
            // between its 8 launches are a larger share: 40.1 - 44.0 us for the table's 39.3
            // on a quiet machine (three runs, 7 Dec 2026), 44.6 us once in CI.
            const double above = hostBound ? 0.16 : 0.08;
            for (double got : {a[i].hostUs, a[i].eventUs})
            {
                EXPECT_GE(got, 0.97 * expect) << live.out;
                EXPECT_LE(got, (1 + above) * std::max(expect, b[i].hostUs)) << live.out;
            }
        }
    }
}

// The live run is also a recording: `gpusim simulate` of it reproduces the live metrics byte
// for byte, for both backends, one or several processes, fixed or measured host time.
TEST(Live, SimulateOfTheRecordingReproducesTheRun)
{
    REQUIRE_SHIM();
    struct Case
    {
        std::string cluster, live, program;
    };
    const std::vector<Case> cases = {
        {"--servers 1", "--gpus 4 --devices-per-process 4 --host-time fixed:2",
         kPerf + " -g 4 -b 1M -e 4M -n 3 -w 1"},
        {"--servers 2 --gpus-per-server 1 --backend packet", "--gpus 2 --host-time fixed:1",
         kPerf + " -b 1M -e 2M -n 2 -w 1"},
        {"--servers 1", "--gpus 4", kTrain + " --iters 2"},
        {"--servers 1", "--gpus 2 --host-time fixed:1", kPerf + " -b 1M -e 2M -n 3 -w 1 --poll"},
    };
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.cluster + " " + c.live + " " + c.program);
        TempDir d;
        const std::string trace = d.Path() + "/trace";
        Result live = Shell(d, kGpusim + " run " + c.cluster + " " + c.live + " --out " + trace +
                                 " --json " + d.Path() + "/live.json -- " + c.program);
        ASSERT_EQ(live.code, 0) << live.err;
        Result sim = Shell(d, kGpusim + " simulate " + trace + " " + c.cluster + " --json " +
                                d.Path() + "/sim.json");
        ASSERT_EQ(sim.code, 0) << sim.err;
        const std::string a = ReadFile(d.Path() + "/live.json");
        ASSERT_GT(a.size(), 100u);
        EXPECT_TRUE(a == ReadFile(d.Path() + "/sim.json"));
    }
}

// Polling with cudaStreamQuery terminates (each poll costs host time) and reads the same
// simulated durations as cudaStreamSynchronize, up to the poll granularity.
TEST(Live, PollingLoopsEndAndAgreeWithSynchronize)
{
    REQUIRE_SHIM();
    TempDir d;
    const std::string args = " -g 2 -b 8M -e 8M -n 5 -w 1";
    Result sync = Shell(d, kGpusim + " run --servers 1 --gpus 2 --devices-per-process 2 "
                                   "--host-time fixed:1 -- " + kPerf + args);
    ASSERT_EQ(sync.code, 0) << sync.err;
    Result poll = Shell(d, kGpusim + " run --servers 1 --gpus 2 --devices-per-process 2 "
                                   "--host-time fixed:1 -- " + kPerf + args + " --poll");
    ASSERT_EQ(poll.code, 0) << poll.err;
    auto a = Rows(sync.out);
    auto b = Rows(poll.out);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_NEAR(a[0].eventUs, b[0].eventUs, 0.01 * a[0].eventUs);
    EXPECT_NEAR(a[0].hostUs, b[0].hostUs, 5.0); // a poll costs 1 us of host time
}

// Many processes on this small machine; every rank's step times equal the replay's.
TEST(Live, EightProcessTrainerMatchesItsReplay)
{
    REQUIRE_SHIM();
    TempDir d;
    const std::string trace = d.Path() + "/trace";
    Result live = Shell(d, kGpusim + " run --servers 1 --gpus 8 --out " + trace + " -- " + kTrain +
                             " --iters 3");
    ASSERT_EQ(live.code, 0) << live.err;
    Result sim = Shell(d, kGpusim + " simulate " + trace + " --servers 1");
    ASSERT_EQ(sim.code, 0) << sim.err;
    // The iteration table rows are the same in both.
    auto rows = [](const std::string& s) {
        std::vector<std::string> v;
        std::istringstream in(s);
        std::string line;
        while (std::getline(in, line))
        {
            if (line.size() > 8 && line[0] == ' ')
            {
                v.push_back(line);
            }
        }
        return v;
    };
    auto a = rows(live.err);
    EXPECT_EQ(a.size(), 8u) << live.err;
    EXPECT_EQ(a, rows(sim.out));
}

// The shim's own work inside a call never reaches the program's clock. A 64 MiB device-to-device
// copy makes the shim move 64 MiB of emulated memory (milliseconds of CPU here), but CUDA returns
// at once: the program's timer sees the modelled cost of the call (a device-to-device cudaMemcpy
// 4.05 us on a Hopper host, a clock read 0.03 us), exactly with api-only host time, and the same plus the program's
// own few instructions when measured.
TEST(LiveHostTime, ShimWorkIsNotTheProgramsHostTime)
{
    REQUIRE_SHIM();
    TempDir d;
    for (const char* mode : {"api-only", "measured"})
    {
        SCOPED_TRACE(mode);
        Result r = Shell(d,
                         kGpusim + " run --servers 1 --gpus 2 --nproc-per-node 1 --host-time " +
                             mode + " -- " + kCopies + " 64");
        ASSERT_EQ(r.code, 0) << r.err;
        double returnUs = -1;
        double doneUs = -1;
        ASSERT_EQ(std::sscanf(r.out.c_str(), "d2d return_us %lf done_us %lf", &returnUs, &doneUs),
                  2)
            << r.out;
        if (std::string(mode) == "api-only")
        {
            EXPECT_NEAR(returnUs, 4.08, 0.001) << r.out;
        }
        else
        {
            // The program's own instructions are measured on the host's clock, so a busy CI
            // machine adds preemption and cache misses (55 us seen once at -j2); the shim's
            // 64 MiB move it must not see costs milliseconds.
            EXPECT_GE(returnUs, 4.08) << r.out;
            EXPECT_LT(returnUs, 500.0) << r.out;
        }
    }
}

// Per-call host cost: each cublasSgemm costs the program what cuBLAS costs on the host (8.3 us
// timed on an H200 host; the shim's own encoding and sending cost 5.3 us per call before it was kept out):
// exactly that with api-only, and that plus the program's own work (well under a microsecond for a
// loop of calls) when measured; not the shim's encoding and sending.
TEST(LiveHostTime, EachCallCostsWhatTheRealLibraryCosts)
{
    REQUIRE_SHIM();
    TempDir d;
    for (const char* mode : {"api-only", "measured"})
    {
        SCOPED_TRACE(mode);
        const std::string trace = d.Path() + "/trace-" + mode;
        Result r = Shell(d,
                         kGpusim + " run --gpus 1 --host-time " + std::string(mode) + " --out " +
                             trace + " -- " + kPerf + " --mode gemm -n 40");
        ASSERT_EQ(r.code, 0) << r.err;
        std::vector<double> gemms = CpuUsOf(trace + "/rank-0.jsonl", "kernel");
        ASSERT_GE(gemms.size(), 40u);
        gemms.erase(gemms.begin()); // the first call also binds the symbol (the program's time)
        std::sort(gemms.begin(), gemms.end());
        const double median = gemms[gemms.size() / 2];
        if (std::string(mode) == "api-only")
        {
            // cublasSgemm 8.3 us + the cudaSetDevice the loop makes before it (0.05 us).
            EXPECT_DOUBLE_EQ(gemms.front(), 8.35);
            EXPECT_DOUBLE_EQ(gemms.back(), 8.35);
        }
        else
        {
            EXPECT_GE(median, 8.35);
            EXPECT_LT(median, 9.35);
        }
    }
}

// --api-costs FILE replaces entries of the table (here cuBLAS's 8.3 us by 20), and a file with a
// mistake ends the program at its first CUDA call, naming the file, the line and what is wrong,
// instead of running on with costs the user did not ask for.
TEST(Live, ApiCostsFileOverridesTheTable)
{
    REQUIRE_SHIM();
    TempDir d;
    const std::string costs = d.Path() + "/costs.txt";
    std::ofstream(costs) << "# my host\ncublas_gemm 20   # timed here\n\n";
    const std::string trace = d.Path() + "/trace";
    Result r = Shell(d, kGpusim + " run --gpus 1 --host-time api-only --api-costs " + costs +
                            " --out " + trace + " -- " + kPerf + " --mode gemm -n 10");
    ASSERT_EQ(r.code, 0) << r.err;
    std::vector<double> gemms = CpuUsOf(trace + "/rank-0.jsonl", "kernel");
    ASSERT_GE(gemms.size(), 10u);
    EXPECT_DOUBLE_EQ(gemms.back(), 20.05); // + the loop's cudaSetDevice

    std::ofstream(costs) << "launch 3.8\nlaunchh 2\nmemset_async fast\nstream_query 0\n";
    Result bad = Shell(d, kGpusim + " run --gpus 1 --host-time api-only --api-costs " + costs +
                              " -- " + kPerf + " --mode gemm -n 10");
    EXPECT_NE(bad.code, 0);
    EXPECT_NE(bad.err.find(costs + ":2: 'launchh': unknown name"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find(costs + ":3: 'memset_async': expected a number"), std::string::npos)
        << bad.err;
    EXPECT_NE(bad.err.find(costs + ":4: 'stream_query': must be > 0"), std::string::npos) << bad.err;
    EXPECT_EQ(bad.err.find(":1:"), std::string::npos) << bad.err;
}

// A host function (cudaLaunchHostFunc runs it at once on the calling thread) is the program's
// own work: 30 ms of CPU in it are 30 ms on the program's clock, also through the _ptsz entry
// point that --default-stream per-thread builds call (two nested API scopes).
TEST(LiveHostTime, HostFunctionsAreTheProgramsTime)
{
    REQUIRE_SHIM();
    TempDir d;
    Result r = Shell(d, kGpusim + " run --gpus 1 --host-time measured -- " + kPerf +
                            " --mode hostfunc -n 30");
    ASSERT_EQ(r.code, 0) << r.err;
    double plain = 0, ptsz = 0;
    ASSERT_EQ(std::sscanf(r.out.c_str(), "hostfunc host_us %lf ptsz_host_us %lf", &plain, &ptsz), 2)
        << r.out;
    for (double us : {plain, ptsz})
    {
        EXPECT_GE(us, 30000.0);
        EXPECT_LT(us, 33000.0);
    }
}

// One process per GPU that selects its GPU by local rank (torchrun / llm.c style), the same with
// the launcher pinning one GPU per process (CUDA_VISIBLE_DEVICES, set by gpusim or by a wrapper
// script): every variant runs and gives the same step time; `gpusim record` + `simulate` gives
// the live run's metrics (api-only host time: the same on every machine).
TEST(Live, TrainerSelectingItsGpuByLocalRank)
{
    REQUIRE_SHIM();
    TempDir d;
    const std::string args = " --steps 3 --layers 2 --batch 2 --seq 512";
    const std::string cluster = " --servers 1 --gpus 8 --host-time api-only";
    Result byRank =
        Shell(d,
              kGpusim + " run" + cluster + " --json " + d.Path() + "/live.json -- " + kGpt + args);
    ASSERT_EQ(byRank.code, 0) << byRank.err;
    const double stepMs = AverageStepMs(byRank.out);
    ASSERT_GT(stepMs, 0) << byRank.out;
    Result pinned =
        Shell(d, kGpusim + " run" + cluster + " --devices-per-process 1 -- " + kGpt + args);
    ASSERT_EQ(pinned.code, 0) << pinned.err;
    EXPECT_DOUBLE_EQ(AverageStepMs(pinned.out), stepMs);
    Result wrapped =
        Shell(d,
              kGpusim + " run" + cluster +
                  " -- sh -c 'CUDA_VISIBLE_DEVICES=$LOCAL_RANK exec \"$0\" \"$@\"' " + kGpt + args);
    ASSERT_EQ(wrapped.code, 0) << wrapped.err;
    EXPECT_DOUBLE_EQ(AverageStepMs(wrapped.out), stepMs);

    const std::string trace = d.Path() + "/trace";
    Result rec =
        Cli(d, "record --gpus 8 --host-time api-only --out " + trace + " -- " + kGpt + args);
    ASSERT_EQ(rec.code, 0) << rec.err;
    EXPECT_NE(rec.out.find("as 8 processes on 8 h100-sxm GPUs"), std::string::npos) << rec.out;
    // At the live run's fidelity (chunk; simulate's default, auto, runs these rings as edge
    // flows, 18 ns off in 6.5 ms).
    Result sim = Shell(d, kGpusim + " simulate " + trace + " --servers 1 --fidelity chunk --json " +
                              d.Path() + "/sim.json");
    ASSERT_EQ(sim.code, 0) << sim.err;
    // Identical but for the communicator's id (random when recording, numbered when live).
    auto withoutCommIds = [](std::string s) {
        for (size_t p = s.find("\"comm\":\""); p != std::string::npos;
             p = s.find("\"comm\":\"", p + 1))
        {
            s.replace(p + 8, 16, "????????????????");
        }
        return s;
    };
    EXPECT_EQ(withoutCommIds(ReadFile(d.Path() + "/live.json")),
              withoutCommIds(ReadFile(d.Path() + "/sim.json")));
}

// Two processes that both drive GPU 0 would be one rank of two programs: refused with a message
// naming both, in live runs and recordings (where no trace is written), as are two processes
// that pass the same rank to ncclCommInitRank.
TEST(Live, OneGpuOrOneCommRankForTwoProcessesIsAnError)
{
    REQUIRE_SHIM();
    TempDir d;
    const std::string args = " --steps 1 --layers 1 --batch 1 --seq 256";
    Result live = Shell(
        d,
        kGpusim +
            " run --servers 1 --gpus 2 --timeout 60 -- sh -c 'LOCAL_RANK=0 exec \"$0\" \"$@\"' " +
            kGpt + args);
    EXPECT_NE(live.code, 0);
    EXPECT_NE(live.err.find("cannot use device 0 (GPU 0 of server 0, rank 0)"), std::string::npos)
        << live.err;
    EXPECT_NE(live.err.find("already drives that GPU"), std::string::npos) << live.err;
    // The second process's failing call says why (NCCL's code for misuse), not "system error".
    EXPECT_NE(live.err.find("ncclCommInitRank(&comm, world, id, rank) -> invalid usage"),
              std::string::npos)
        << live.err;
    EXPECT_LT(live.wallS, 30.0);

    const std::string trace = d.Path() + "/trace";
    Result rec = Cli(d,
                     "record --gpus 2 --timeout 60 --out " + trace +
                         " -- sh -c 'LOCAL_RANK=0 exec \"$0\" \"$@\"' " + kGpt + args);
    EXPECT_EQ(rec.code, 2);
    EXPECT_NE(rec.err.find("already drives that GPU"), std::string::npos) << rec.err;
    EXPECT_FALSE(Exists(trace + "/manifest.json"));

    Result ranks = Cli(d,
                       "record --gpus 2 --timeout 60 --out " + trace +
                           " -- sh -c 'RANK=0 exec \"$0\" \"$@\"' " + kGpt + args);
    EXPECT_EQ(ranks.code, 2);
    EXPECT_NE(ranks.err.find("rank 0 of communicator"), std::string::npos) << ranks.err;
    EXPECT_NE(ranks.err.find("already held by process"), std::string::npos) << ranks.err;
    EXPECT_FALSE(Exists(trace + "/manifest.json"));
}

// `gpusim record` starts processes as `gpusim run` does: `{rank}` and `{world_size}` substituted, launcher
// variables set.
TEST(Live, RecordPlacesProcessesAsRunDoes)
{
    REQUIRE_SHIM();
    TempDir d;
    const std::string trace = d.Path() + "/trace";
    Result rec = Cli(d,
                     "record --gpus 2 --out " + trace +
                         " -- sh -c 'echo \"$0 $RANK $LOCAL_RANK $WORLD_SIZE\" > " + d.Path() +
                         "/env-{rank}; exec " + kGpt +
                         " --steps 1 --layers 1 --batch 1 --seq 128' r{rank}/{world_size}");
    ASSERT_EQ(rec.code, 0) << rec.err;
    EXPECT_EQ(ReadFile(d.Path() + "/env-0"), "r0/2 0 0 2\n");
    EXPECT_EQ(ReadFile(d.Path() + "/env-1"), "r1/2 1 1 2\n");
}

// A program that polls for work that can never complete (its peer left before the collective)
// is reported within seconds, naming what each thread polls, instead of polling forever.
TEST(Live, PollingForWorkThatNeverCompletesIsReported)
{
    REQUIRE_SHIM();
    TempDir d;
    Result r = Shell(d,
                     kGpusim + " run --servers 1 --gpus 2 -- " + kPerf +
                         " -b 1M -e 1M -n 2 -w 1 --poll --skip-rank 1");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("keep polling for work that can never complete"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("polls cudaStreamQuery on stream"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("never joined: 1"), std::string::npos) << r.err;
    EXPECT_LT(r.wallS, 30.0);
}

// mpirun as the launched program (Debian's OpenMPI): its ranks are the job's processes on the
// shim, the NCCL id goes through MPI_Bcast, each rank finds its GPU through MPI's node-local
// communicator. MPI barriers spin on the CPU: the simulation goes on without a rank that spins
// while the others wait (a warning says so), and with api-only host time the spinning is no
// host time. Each iteration (one AllReduce of 64 MiB on 4 GPUs, timed with MPI_Wtime) is the
// collective plus its launch and wake-up (`gpusim collective` gives the collective alone).
TEST(Live, MpirunStartsTheRanks)
{
    REQUIRE_SHIM();
    if (!Exists(kMpiTrain) || std::system("command -v mpirun >/dev/null 2>&1") != 0)
    {
        GTEST_SKIP() << "OpenMPI not installed (libopenmpi-dev, openmpi-bin): MPI test skipped";
    }
    TempDir d;
    Result r = Shell(d,
                     kGpusim +
                         " run --servers 1 --gpus 4 --nproc-per-node 1 --host-time api-only "
                         "--timeout 120 -- mpirun -np 4 --oversubscribe --allow-run-as-root " +
                         kMpiTrain + " 4");
    ASSERT_EQ(r.code, 0) << r.err;
    Result ref = Shell(d,
                       kGpusim + " collective --servers 1 --gpus-per-server 4 --min-bytes 64M "
                                 "--max-bytes 64M --quiet");
    ASSERT_EQ(ref.code, 0) << ref.err;
    auto coll = CollectiveRows(ref.out);
    ASSERT_EQ(coll.size(), 1u) << ref.out;
    std::vector<double> iterations;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
    {
        double us = 0;
        int i = 0;
        if (std::sscanf(line.c_str(),
                        "iteration %d allreduce 67108864 bytes on 4 ranks: %lf us",
                        &i,
                        &us) == 2)
        {
            iterations.push_back(us);
        }
    }
    ASSERT_EQ(iterations.size(), 4u) << r.out;
    const double fastest = *std::min_element(iterations.begin(), iterations.end());
    EXPECT_GE(fastest, coll[0].hostUs) << r.out;
    EXPECT_LT(fastest, 1.06 * coll[0].hostUs) << r.out;
}

// A multi-server MPI job as a cluster runs it: one mpirun for the whole job (`--launcher`), its
// ranks placed on the servers by MPI rank, each seeing its server's host name (so that ranks
// counting the ranks of their node by host name, as nccl-tests does, pick GPUs 0 and 1 on both
// servers: without it ranks 2 and 3 would ask for GPUs 2 and 3 of a 2-GPU server) and Open MPI's
// local-rank variable of its server. The AllReduce crosses the servers and takes the
// simulator's own time for the collective.
TEST(Live, LauncherPlacesMpiRanksOnServers)
{
    REQUIRE_SHIM();
    if (!Exists(kMpiTrain) || std::system("command -v mpirun >/dev/null 2>&1") != 0)
    {
        GTEST_SKIP() << "OpenMPI not installed (libopenmpi-dev, openmpi-bin): MPI test skipped";
    }
    TempDir d;
    Result r = Shell(d,
                     kGpusim +
                         " run --servers 2 --gpus-per-server 2 --launcher --host-time api-only "
                         "--timeout 120 -- mpirun -np 4 --oversubscribe --allow-run-as-root " +
                         kMpiTrain + " 3");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("one launcher; its MPI ranks placed on the servers by rank"),
              std::string::npos)
        << r.err;
    std::map<int, std::pair<std::string, int>> placed; // rank -> (host, local rank)
    std::vector<double> iterations;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
    {
        int rank = 0, local = 0, envLocal = 0;
        char host[256];
        double us = 0;
        int i = 0;
        if (std::sscanf(line.c_str(),
                        "rank %d on %255s local rank %d (OMPI_COMM_WORLD_LOCAL_RANK %d)",
                        &rank,
                        host,
                        &local,
                        &envLocal) == 4)
        {
            std::string h = host;
            h.pop_back(); // the ':' after the host name
            placed[rank] = {h, local};
            EXPECT_EQ(envLocal, local) << line;
        }
        else if (std::sscanf(line.c_str(),
                             "iteration %d allreduce 67108864 bytes on 4 ranks: %lf us",
                             &i,
                             &us) == 2)
        {
            iterations.push_back(us);
        }
    }
    ASSERT_EQ(placed.size(), 4u) << r.out;
    for (int rank = 0; rank < 4; ++rank)
    {
        const std::string suffix = "-gpusim" + std::to_string(rank / 2);
        const std::string& host = placed[rank].first;
        EXPECT_TRUE(host.size() > suffix.size() &&
                    host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0)
            << rank << " on " << host;
        EXPECT_EQ(placed[rank].second, rank % 2) << rank;
    }
    Result ref = Shell(d,
                       kGpusim + " collective --servers 2 --gpus-per-server 2 --min-bytes 64M "
                                 "--max-bytes 64M --quiet");
    ASSERT_EQ(ref.code, 0) << ref.err;
    auto coll = CollectiveRows(ref.out);
    ASSERT_EQ(coll.size(), 1u) << ref.out;
    ASSERT_EQ(iterations.size(), 3u) << r.out;
    const double fastest = *std::min_element(iterations.begin(), iterations.end());
    EXPECT_GE(fastest, coll[0].hostUs) << r.out;
    EXPECT_LT(fastest, 1.06 * coll[0].hostUs) << r.out;
    // The launcher takes no rank or server of its own, and nothing else goes with it.
    Result bad = Shell(d, kGpusim + " run --launcher --nproc-per-node 1 -- true");
    EXPECT_EQ(bad.code, 1);
    EXPECT_NE(bad.err.find("--launcher starts one process"), std::string::npos) << bad.err;
}

// A rank that crashes mid-run: the others are stopped, the report names the crash, quickly.
TEST(Live, CrashedRankEndsTheRunWithItsStatus)
{
    REQUIRE_SHIM();
    TempDir d;
    Result r = Shell(d, kGpusim + " run --servers 1 --gpus 2 --host-time fixed:1 -- " + kPerf +
                          " -b 1M -e 4M -n 5 -w 1 --crash-rank 1");
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("process 1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("signal 6"), std::string::npos) << r.err;
    EXPECT_LT(r.wallS, 20.0);
}

// The live socket is untrusted input: whatever connects and sends garbage, half a line, an
// endless line, an op for another process's GPU or for a GPU the job lacks ends the run with a
// message naming that process and what it sent, and so does one whose calls cost no host time
// (its ops would queue without bound); the well-behaved program (an endless AllReduce loop on
// the same GPU) is stopped too, nothing hangs and nothing grows unbounded.
TEST(Live, UntrustedInputEndsTheRunNamingTheProcess)
{
    REQUIRE_SHIM();
    TempDir d;
    const struct
    {
        const char* mode;
        const char* says;
    } cases[] = {
        {"garbage", "not a gpusim live message: 'this is not a live message'"},
        {"truncated", "closed its connection in the middle of a line: 'O 0 {\"op\":\"lau'"},
        {"huge", "bytes without a newline (a live message is one line of at most 1 MiB)"},
        {"foreign 0", "each GPU belongs to one process"},
        {"badrank", "rank out of range in 'O 999"},
        // Bounded resources: ops that cost no host time would queue until memory runs out.
        {"frozen", "ops in a row without its clock moving from simulated 0.000 us"},
    };
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.mode);
        // The rogue starts once the real program runs, so GPU 0 is already taken; the frozen
        // one runs alone (its GPU is its own).
        const bool alone = std::string(c.mode) == "frozen";
        Result r = Shell(d, kGpusim + " run --gpus 1 --host-time fixed:1 --timeout 60 -- " +
                                (alone ? "sh -c '" + kRogue + " frozen; true'"
                                       : "sh -c '" + kPerf +
                                             " -b 1M -e 1M -n 1000000 -w 1 & sleep 0.5; " +
                                             kRogue + " " + c.mode + "; wait'"));
        EXPECT_NE(r.code, 0) << r.err;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("process pid "), std::string::npos) << r.err; // the rogue, by pid
        EXPECT_LT(r.wallS, 30.0);
    }
}

// A rank that leaves before the collective: the other waits forever in simulated time; the run
// ends with the stuck-run report and exit code 3, and the waiting program gets an error.
TEST(Live, RankThatNeverJoinsIsReportedAsStuck)
{
    REQUIRE_SHIM();
    TempDir d;
    Result r = Shell(d, kGpusim + " run --servers 1 --gpus 2 --host-time fixed:1 -- " + kPerf +
                          " -b 1M -e 1M -n 2 -w 1 --skip-rank 1");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("still waiting"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("rank 0"), std::string::npos) << r.err;
    EXPECT_LT(r.wallS, 20.0);
}

// The simulator killed mid-run: the programs notice (their CUDA calls fail with a message) and
// exit; nothing hangs. Their stdout pipe closes once every process has exited.
TEST(Live, ProgramsExitWhenTheSimulatorDies)
{
    REQUIRE_SHIM();
    TempDir tmp;
    int pipefd[2];
    ASSERT_EQ(::pipe(pipefd), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0)
    {
        ::dup2(pipefd[1], STDOUT_FILENO);
        ::dup2(pipefd[1], STDERR_FILENO);
        ::close(pipefd[0]);
        ::setenv("TMPDIR", tmp.Path().c_str(), 1); // the killed simulator's socket dir goes too
        // Measured host time and a long sweep: the run lasts long enough to be killed in it.
        ::execl(kGpusim.c_str(), "gpusim", "run", "--servers", "1", "--gpus", "2", "--",
                kPerf.c_str(), "-b", "1M", "-e", "1M", "-n", "1000", "-w", "1", "--sleep-ms", "10",
                (char*)nullptr);
        ::_exit(127);
    }
    ::close(pipefd[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    // Read until EOF: every writer (the rank processes) is gone.
    std::string text;
    auto t0 = std::chrono::steady_clock::now();
    bool eof = false;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15))
    {
        pollfd pf = {pipefd[0], POLLIN, 0};
        if (::poll(&pf, 1, 200) > 0)
        {
            char buf[4096];
            ssize_t n = ::read(pipefd[0], buf, sizeof buf);
            if (n <= 0)
            {
                eof = true;
                break;
            }
            text.append(buf, n);
        }
    }
    ::close(pipefd[0]);
    EXPECT_TRUE(eof) << "rank processes still running 15 s after the simulator died";
    EXPECT_NE(text.find("lost the simulator"), std::string::npos) << text;
}

// Ctrl-C stops everything and reports the signal.
TEST(Live, InterruptStopsEverything)
{
    REQUIRE_SHIM();
    TempDir d;
    auto t0 = std::chrono::steady_clock::now();
    // The iteration count (never reached) marks this run's processes, so that the pgrep below
    // cannot see the rank processes of another test (ctest -j) or of the same test in another
    // build on the machine: 40000 + pid % 10000, a range no other test uses.
    const std::string iterations = std::to_string(40000 + ::getpid() % 10000);
    Result r = Shell(d, "timeout --preserve-status -s INT 2 " + kGpusim + " run --servers 1 --gpus 2 -- " + kPerf +
                          " -b 1M -e 1M -n " + iterations + " -w 1 --sleep-ms 10");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.code, 130) << r.err;
    EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
    // Within a second of the signal (sent after 2 s), with the partial report.
    EXPECT_LT(s, 3.0);
    EXPECT_NE(r.err.find("# simulated"), std::string::npos) << r.err;
    // No rank process is left behind.
    // "[f]": the pattern must not match the shell running pgrep itself.
    Result left = Shell(d, "(pgrep -f 'shim_live_per[f] -b 1M -e 1M -n " + iterations + " ' || true)");
    EXPECT_EQ(left.out, "");
}

// A program that never calls CUDA still runs; its clock is host time from the job's origin.
TEST(Live, ProgramWithoutCudaRuns)
{
    REQUIRE_SHIM();
    TempDir d;
    Result r = Shell(d, kGpusim + " run --gpus 2 -- sh -c 'echo rank $RANK of $WORLD_SIZE'");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("rank 0 of 2"), std::string::npos);
    EXPECT_NE(r.out.find("rank 1 of 2"), std::string::npos);
}

// Arguments get their rank, and launcher variables are set per process.
TEST(Live, RankPlaceholdersAndLauncherEnvironment)
{
    REQUIRE_SHIM();
    TempDir d;
    Result r = Shell(d, kGpusim + " run --gpus 4 --devices-per-process 2 -- sh -c "
                                "'echo \"$0 $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE\"' "
                                "r{rank}/{world_size}");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("r0/2 0 0 2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("r1/2 1 1 2"), std::string::npos) << r.out;
}

// Bad use is a usage error, not a crash.
TEST(Live, UsageErrors)
{
    REQUIRE_SHIM();
    TempDir d;
    EXPECT_EQ(Shell(d, kGpusim + " run --gpus 2").code, 1);
    EXPECT_EQ(Shell(d, kGpusim + " run --gpus 3 --devices-per-process 2 -- true").code, 1);
    EXPECT_EQ(Shell(d, kGpusim + " run --host-time sometimes -- true").code, 1);
    // No cost per call would let a polling loop run forever at one instant.
    Result zero = Shell(d, kGpusim + " run --host-time fixed:0 -- true");
    EXPECT_EQ(zero.code, 1);
    EXPECT_NE(zero.err.find("polling loop"), std::string::npos) << zero.err;
    // A program that cannot start: the launcher returns the reason (the child used to print
    // it itself); the run ends at once.
    Result missing = Shell(d, kGpusim + " run --gpus 1 -- /nonexistent/program");
    EXPECT_EQ(missing.code, 2) << missing.err;
    EXPECT_NE(missing.err.find("gpusim run: error: cannot run /nonexistent/program: No such "
                               "file or directory"),
              std::string::npos)
        << missing.err;
    // A program with NVIDIA's CUDA runtime linked in (nvcc's default) would talk to the driver
    // past the shim and fail with "CUDA driver version is insufficient": refused up front with
    // the fix. The same bytes naming the shared runtime are not (the exec itself then fails).
    const std::string elf = std::string("\x7f" "ELF", 4);
    const std::string staticProgram = d.Path() + "/static_cudart";
    const std::string sharedProgram = d.Path() + "/shared_cudart";
    {
        std::ofstream(staticProgram) << elf << std::string(64, '\0') << "libcudart_static_0d44431";
        std::ofstream(sharedProgram)
            << elf << std::string(64, '\0') << "libcudart_static_0d44431 libcudart.so.13";
    }
    ::chmod(staticProgram.c_str(), 0755);
    ::chmod(sharedProgram.c_str(), 0755);
    Result statically = Shell(d, kGpusim + " run --gpus 1 -- " + staticProgram);
    EXPECT_EQ(statically.code, 2) << statically.err;
    EXPECT_NE(statically.err.find("carries NVIDIA's CUDA runtime inside"), std::string::npos)
        << statically.err;
    EXPECT_NE(statically.err.find("nvcc -cudart shared"), std::string::npos) << statically.err;
    Result shared = Shell(d, kGpusim + " run --gpus 1 -- " + sharedProgram);
    EXPECT_EQ(shared.err.find("CUDA runtime inside"), std::string::npos) << shared.err;
    Result r = Shell(d, kGpusim + " run --sync eventually -- true");
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("--sync"), std::string::npos);
    // More processes than a server's GPUs would leave some without a GPU: refused, not trimmed.
    Result many = Shell(d, kGpusim + " run --gpus 2 --nproc-per-node 3 -- true");
    EXPECT_EQ(many.code, 1);
    EXPECT_NE(many.err.find("3 processes per server"), std::string::npos) << many.err;
}

// A thread per GPU while the main thread, which used GPU 0 first, waits in join(): blocked
// outside CUDA, it must not hold the simulation (its wait is lifted once every thread that
// bounds time is off the CPU). Each thread's timer reads the simulated AllReduce, which equals
// `gpusim collective` on the same 2 GPUs, and the recording replays identically.
TEST(Live, ThreadPerGpuWithAJoiningMainThread)
{
    REQUIRE_SHIM();
    for (const char* sync : {"conservative", "optimistic"})
    {
        SCOPED_TRACE(sync);
        TempDir d;
        const std::string trace = d.Path() + "/trace";
        Result live = Shell(d, kGpusim + " run --servers 1 --gpus 2 --devices-per-process 2 "
                                         "--host-time fixed:1 --timeout 60 --sync " + sync + " --out " + trace +
                                   " --json " + d.Path() + "/live.json -- " + kThreads + " 2");
        ASSERT_EQ(live.code, 0) << live.err;
        Result ref = Shell(d, kGpusim + " collective --servers 1 --gpus-per-server 2 --bytes 64M --quiet");
        ASSERT_EQ(ref.code, 0);
        auto rows = CollectiveRows(ref.out);
        ASSERT_EQ(rows.size(), 1u);
        double us0 = 0, us1 = 0;
        ASSERT_EQ(std::sscanf(live.out.c_str(), "gpu 0: %lf us per 64 MiB AllReduce\ngpu 1: %lf", &us0, &us1), 2)
            << live.out;
        EXPECT_NEAR(us0, rows[0].hostUs, 0.02 * rows[0].hostUs);
        EXPECT_NEAR(us1, rows[0].hostUs, 0.02 * rows[0].hostUs);
        Result sim = Shell(d, kGpusim + " simulate " + trace + " --servers 1 --json " + d.Path() + "/sim.json");
        ASSERT_EQ(sim.code, 0) << sim.err;
        EXPECT_TRUE(ReadFile(d.Path() + "/live.json") == ReadFile(d.Path() + "/sim.json"));
        EXPECT_NE(ReadFile(trace + "/live-stats.json").find("\"late_ops\":0"), std::string::npos);
    }
}

namespace
{
/// A number from live-stats.json.
long
Stat(const std::string& json, const std::string& key)
{
    auto p = json.find("\"" + key + "\":");
    return p == std::string::npos ? -1 : std::atol(json.c_str() + p + key.size() + 3);
}
} // namespace

// Optimistic synchronization gives the conservative result. After each AllReduce rank 1 waits
// off the CPU (as for I/O: no simulated time) until the simulator's speculation log
// (LiveJobSource::SpeculationLog, set through ns-3's NS_ATTRIBUTE_DEFAULT) says a speculation
// has run past it as far as it can go. Its next op then lands in the speculated past, so every
// such speculation is rolled back and re-simulated: deterministic, no real-time sleeps.
TEST(Live, OptimisticRollsBackToTheConservativeResult)
{
    REQUIRE_SHIM();
    TempDir d;
    const std::string prog = kPerf + " -b 1M -e 2M -n 3 -w 1";
    Result cons = Shell(d, kGpusim + " run --servers 1 --gpus 2 --host-time fixed:1 --json " +
                               d.Path() + "/c.json -- " + prog);
    ASSERT_EQ(cons.code, 0) << cons.err;
    const std::string log = d.Path() + "/speculation.log";
    Result opt = Shell(d, "NS_ATTRIBUTE_DEFAULT='ns3::LiveJobSource::SpeculationLog=" + log + "' " +
                              kGpusim + " run --servers 1 --gpus 2 --host-time fixed:1 --sync "
                              "optimistic --timeout 120 --out " + d.Path() + "/o --json " +
                              d.Path() + "/o.json -- " + prog +
                              " --sleep-rank 1 --wait-speculation " + log);
    ASSERT_EQ(opt.code, 0) << opt.err;
    EXPECT_EQ(opt.out, cons.out); // the program printed the same simulated times
    EXPECT_TRUE(ReadFile(d.Path() + "/c.json") == ReadFile(d.Path() + "/o.json"));
    const std::string stats = ReadFile(d.Path() + "/o/live-stats.json");
    // 6 timed AllReduces, each waited for by a speculation that must roll back.
    EXPECT_GE(Stat(stats, "snapshots"), 6) << stats;
    EXPECT_GE(Stat(stats, "rollbacks"), 6) << stats;
    EXPECT_GT(Stat(stats, "resimulated_events"), 0) << stats;
    const std::string steps = ReadFile(log);
    size_t dry = 0;
    size_t rollbacks = 0;
    for (size_t p = 0; (p = steps.find("dry ", p)) != std::string::npos; ++p)
    {
        ++dry;
    }
    for (size_t p = 0; (p = steps.find("rollback ", p)) != std::string::npos; ++p)
    {
        ++rollbacks;
    }
    EXPECT_GE(dry, 6u) << steps;
    EXPECT_EQ(rollbacks, static_cast<size_t>(Stat(stats, "rollbacks"))) << steps;
}

// Host work after issuing each step's AllReduce (the program runs late in simulated time): the
// simulator speculates through the AllReduce while the program computes, and the speculation
// stands. The recording still replays exactly (packet backend).
TEST(Live, OptimisticSpeculationCommitsAndReplaysExactly)
{
    REQUIRE_SHIM();
    TempDir d;
    const std::string cluster = " --servers 2 --gpus-per-server 1 --backend packet";
    Result opt = Shell(d, kGpusim + " run" + cluster + " --gpus 2 --sync optimistic --out " +
                              d.Path() + "/o --json " + d.Path() + "/o.json -- " + kPerf +
                              " --mode steps -n 4 -e 4M --host-work-ms 20");
    ASSERT_EQ(opt.code, 0) << opt.err;
    const std::string stats = ReadFile(d.Path() + "/o/live-stats.json");
    EXPECT_GE(Stat(stats, "commits"), 1) << stats;
    EXPECT_GT(Stat(stats, "max_snapshot_bytes"), 0) << stats;
    Result sim = Shell(d, kGpusim + " simulate " + d.Path() + "/o" + cluster + " --json " +
                              d.Path() + "/s.json");
    ASSERT_EQ(sim.code, 0) << sim.err;
    EXPECT_TRUE(ReadFile(d.Path() + "/o.json") == ReadFile(d.Path() + "/s.json"));
}

// --timeout ends a run that takes too long in real time: exit 3, naming what the simulator was
// waiting for, and no process left behind.
TEST(Live, TimeoutEndsTheRun)
{
    REQUIRE_SHIM();
    TempDir d;
    // The iteration count (never reached) marks this run's processes, so that a run of the
    // same test elsewhere on the machine (another build's CI) is not taken for ours: 20000 +
    // pid % 10000, a range no other test uses.
    const std::string iterations = std::to_string(20000 + ::getpid() % 10000);
    Result r = Shell(d, kGpusim + " run --servers 1 --gpus 2 --timeout 1 -- " + kPerf +
                            " -b 1M -e 1M -n " + iterations + " -w 1 --sleep-ms 50 --sleep-rank 1");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("timed out after 1 s (the simulator was waiting for"), std::string::npos)
        << r.err;
    EXPECT_LT(r.wallS, 10.0);
    Result left = Shell(d, "(pgrep -f 'shim_live_per[f] -b 1M -e 1M -n " + iterations +
                               " -w 1 --sleep-ms 50' || true)");
    EXPECT_EQ(left.out, "");
}


// A live program is one job among others (`gpusim jobs`, run: entry): shim_live_perf's
// 64 MiB AllReduce between GPU 0 and GPU 2 crosses the spine of a two-leaf fabric (100 Gb/s
// NICs, one 100 Gb/s link per leaf); next to an AllReduce job on GPUs 1 and 3 over the same
// uplinks, the time the program measures itself doubles (measured 5689 -> 11319 us), as max-min
// sharing of the uplink predicts for a bandwidth-bound transfer.
TEST(Live, AProgramNextToAnotherJobMeasuresTheSharedFabric)
{
    REQUIRE_SHIM();
    TempDir d;
    {
        std::ofstream(d.Path() + "/two.yaml")
            << "servers: 4\ngpus_per_server: 1\nnics_per_server: 1\nnic_gbps: 100\n"
               "fabric: leaf-spine\nnics_per_leaf: 2\noversubscription: 2\n";
    }
    const std::string live = "cluster: two.yaml\njobs:\n  - name: live\n    run: " + kPerf +
                             " -g 1 -b 64M -e 64M -n 5 -w 1\n    ranks: 2\n"
                             "    nproc_per_node: 1\n    placement: 0,2\n";
    const std::string bench = "  - name: bench\n    collective: allreduce\n    bytes: 1G\n"
                              "    ranks: 2\n    placement: 1,3\n";
    std::ofstream(d.Path() + "/alone.yaml") << live;
    std::ofstream(d.Path() + "/shared.yaml") << live + bench;
    Result alone = Cli(d, "jobs " + d.Path() + "/alone.yaml");
    ASSERT_EQ(alone.code, 0) << alone.err << alone.out;
    Result shared = Cli(d, "jobs " + d.Path() + "/shared.yaml");
    ASSERT_EQ(shared.code, 0) << shared.err << shared.out;
    const auto a = Rows(alone.out);
    const auto s = Rows(shared.out);
    ASSERT_EQ(a.size(), 1u) << alone.out;
    ASSERT_EQ(s.size(), 1u) << shared.out;
    EXPECT_EQ(a[0].bytes, 64.0 * 1048576);
    const double ratio = s[0].eventUs / a[0].eventUs;
    EXPECT_GT(ratio, 1.9) << alone.out << shared.out;
    EXPECT_LT(ratio, 2.05) << alone.out << shared.out;
    EXPECT_NE(shared.out.find("\nbench                 2  1,3"), std::string::npos) << shared.out;
    EXPECT_NE(shared.out.find("\nlive                  2  0,2"), std::string::npos) << shared.out;
}
