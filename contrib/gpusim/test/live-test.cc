// Live mode (gpusim run): unmodified programs on the shim, their own timers reading simulated
// time; the live run equals `gpusim simulate` of its own recording; failures end quickly.
// The programs are the shim's test programs (shim/test/live_perf.cc, train.cc); the suite
// skips when the shim is not built.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
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
// eight GPUs launches NCCL's eight kernels one after the other (8 x 6.5 us of host time per
// iteration, doc/live-mode.md), so small sizes wait for the host, as real `-g 8` runs do.
TEST(Live, AllReduceLoopMatchesCollectiveSweep)
{
    REQUIRE_SHIM();
    TempDir d;
    Result ref = Shell(d, kGpusim + " collective --servers 1 --min-bytes 1M --max-bytes 256M "
                                  "--step-factor 4 --quiet");
    ASSERT_EQ(ref.code, 0) << ref.err;
    auto b = CollectiveRows(ref.out);
    ASSERT_EQ(b.size(), 5u) << ref.out;
    // ncclGroupStart/End + per GPU nccl_enqueue and nccl_launch (the H100 host cost table).
    const double hostPerIterationUs = 0.2 + 8 * (0.5 + 6.0);
    for (const char* layout : {"--nproc-per-node 8 -- " , "--nproc-per-node 1 -- "})
    {
        SCOPED_TRACE(layout);
        const bool onePerGpu = std::string(layout).find(" 8 ") != std::string::npos;
        Result live = Shell(d, kGpusim + " run --servers 1 --gpus 8 " + layout + kPerf +
                                   (onePerGpu ? " -g 1" : " -g 8") +
                                   " -b 1M -e 256M -f 4 -n 50 -w 5 --poll");
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
            // Measured host time adds the program's own (small) work between calls.
            const double above = hostBound ? 0.10 : 0.05;
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
    // -n 1003: a count no other test uses, so the pgrep below cannot see the rank processes of
    // a test running beside this one (ctest -j).
    Result r = Shell(d, "timeout --preserve-status -s INT 2 " + kGpusim + " run --servers 1 --gpus 2 -- " + kPerf +
                          " -b 1M -e 1M -n 1003 -w 1 --sleep-ms 10");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.code, 130) << r.err;
    EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
    EXPECT_LT(s, 12.0);
    // No rank process is left behind.
    // "[f]": the pattern must not match the shell running pgrep itself.
    Result left = Shell(d, "(pgrep -f 'shim_live_per[f] -b 1M -e 1M -n 1003' || true)");
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
    Result r = Shell(d, kGpusim + " run --sync eventually -- true");
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("--sync"), std::string::npos);
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

// Optimistic synchronization gives the conservative result. Rank 1 sleeps (real time, no
// simulated time) after each AllReduce: the simulator speculates past it, and its next op lands
// in the speculated past, so the speculation is rolled back and re-simulated.
TEST(Live, OptimisticRollsBackToTheConservativeResult)
{
    REQUIRE_SHIM();
    TempDir d;
    // 40 ms of sleep per AllReduce: long against any scheduling delay of a busy CI machine.
    const std::string prog = kPerf + " -b 1M -e 2M -n 3 -w 1 --sleep-ms 40 --sleep-rank 1";
    Result cons = Shell(d, kGpusim + " run --servers 1 --gpus 2 --host-time fixed:1 --json " +
                               d.Path() + "/c.json -- " + prog);
    ASSERT_EQ(cons.code, 0) << cons.err;
    Result opt = Shell(d, kGpusim + " run --servers 1 --gpus 2 --host-time fixed:1 --sync "
                              "optimistic --out " + d.Path() + "/o --json " + d.Path() +
                              "/o.json -- " + prog);
    ASSERT_EQ(opt.code, 0) << opt.err;
    EXPECT_EQ(opt.out, cons.out); // the program printed the same simulated times
    EXPECT_TRUE(ReadFile(d.Path() + "/c.json") == ReadFile(d.Path() + "/o.json"));
    const std::string stats = ReadFile(d.Path() + "/o/live-stats.json");
    EXPECT_GE(Stat(stats, "snapshots"), 1) << stats;
    EXPECT_GE(Stat(stats, "rollbacks"), 1) << stats;
    EXPECT_GT(Stat(stats, "resimulated_events"), 0) << stats;
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
    Result r = Shell(d, kGpusim + " run --servers 1 --gpus 2 --timeout 1 -- " + kPerf +
                            " -b 1M -e 1M -n 1000 -w 1 --sleep-ms 50 --sleep-rank 1");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("timed out after 1 s (the simulator was waiting for"), std::string::npos)
        << r.err;
    EXPECT_LT(r.wallS, 10.0);
    Result left = Shell(d, "(pgrep -f 'shim_live_per[f] -b 1M -e 1M -n 1000 -w 1 --sleep-ms 50' || true)");
    EXPECT_EQ(left.out, "");
}

