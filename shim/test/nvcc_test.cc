// Optional: real CUDA programs compiled by nvcc against NVIDIA's headers (-cudart shared) and
// run on the shim's libraries. Skipped, visibly, when the toolkit is not installed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "trace-reader.h"

using namespace shimtest;

namespace {

const std::string kNvcc = "/usr/local/cuda/bin/nvcc";
const std::string kWork = GPUSIM_NVCC_WORK_DIR;

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

int Run(const std::string& cmd, std::string* out = nullptr) {
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) return -1;
  char buf[512];
  std::string text;
  while (fgets(buf, sizeof buf, p)) text += buf;
  int rc = pclose(p);
  if (out) *out = text;
  if (rc != 0) fprintf(stderr, "$ %s\n%s", cmd.c_str(), text.c_str());
  return rc;
}

// Compiles shim/nvcc/NAME.cu; returns the executable path or "" (with a test failure).
std::string Compile(const std::string& name, const std::string& flags = "", const std::string& suffix = "") {
  mkdir(kWork.c_str(), 0755);
  std::string exe = kWork + "/" + name + suffix;
  std::string src = std::string(GPUSIM_SHIM_SOURCE_DIR) + "/nvcc/" + name + ".cu";
  // NCCL's header ships with some toolkits only; fall back to the shim's copy of the API.
  std::string ncclInc;
  if (!Exists("/usr/local/cuda/include/nccl.h")) {
    std::string dir = kWork + "/nccl-include";
    mkdir(dir.c_str(), 0755);
    Run("cp " + std::string(GPUSIM_SHIM_SOURCE_DIR) + "/include/nccl.h " + dir + "/");
    ncclInc = " -idirafter " + dir;
  }
  std::string cmd = kNvcc + " -std=c++17 -cudart shared -arch=sm_90 " + flags + ncclInc + " -o " + exe + " " + src +
                    " -L" + GPUSIM_SHIM_LIBDIR + " -lnccl";
  EXPECT_EQ(Run(cmd), 0) << cmd;
  return Exists(exe) ? exe : "";
}

// Runs a compiled program on the shim through gpusim-launch, recording into DIR.
int Launch(const std::string& args, const std::string& dir, std::string* out) {
  return Run(std::string(GPUSIM_LAUNCH) + " -o " + dir + " " + args, out);
}

struct Nvcc : ::testing::Test {
  void SetUp() override {
    if (!Exists(kNvcc)) GTEST_SKIP() << "nvcc not found (" << kNvcc << "): optional CUDA program tests skipped";
  }
};

TEST_F(Nvcc, TripleChevronKernels) {
  std::string exe = Compile("kernels");
  ASSERT_FALSE(exe.empty());
  std::string dir = kWork + "/trace-kernels", out;
  ASSERT_EQ(Launch("-- " + exe, dir, &out), 0) << out;
  EXPECT_NE(out.find("device: NVIDIA H100 80GB HBM3, 132 SMs, cc 9.0, 81920 MiB"), std::string::npos) << out;
  auto ops = ReadRank(dir + "/rank-0.jsonl");
  auto axpy = Select(ops, "kernel", "name", "axpy(float, float const*, float*, int)");
  auto scale = Select(ops, "kernel", "name", "void scale<float, 128>(float*, float, int)");
  ASSERT_EQ(axpy.size(), 4u);
  ASSERT_EQ(scale.size(), 4u);
  EXPECT_EQ(axpy[0].Get("mangled"), "_Z4axpyfPKfPfi");
  EXPECT_EQ(axpy[0].Get("grid"), "[4096,1,1]");
  EXPECT_EQ(axpy[0].Int("stream"), 0);
  EXPECT_GT(scale[0].Int("stream"), 0);
  EXPECT_EQ(Select(ops, "memcpy").size(), 2u);
}

TEST_F(Nvcc, PerThreadDefaultStream) {
  std::string exe = Compile("kernels", "--default-stream per-thread", "_ptds");
  ASSERT_FALSE(exe.empty());
  std::string dir = kWork + "/trace-ptds", out;
  ASSERT_EQ(Launch("-- " + exe, dir, &out), 0) << out;
  auto ops = ReadRank(dir + "/rank-0.jsonl");
  auto axpy = Select(ops, "kernel", "mangled", "_Z4axpyfPKfPfi");
  ASSERT_EQ(axpy.size(), 4u);
  // <<<g, b>>> without a stream now means the thread's own default stream, declared first.
  auto creates = Select(ops, "stream_create");
  ASSERT_FALSE(creates.empty());
  EXPECT_NE(axpy[0].Int("stream"), 0);
  bool declared = false;
  for (const Op& c : creates) declared |= c.Int("stream") == axpy[0].Int("stream");
  EXPECT_TRUE(declared);
}

TEST_F(Nvcc, NvtxRangesBecomeMarkers) {
  if (!Exists("/usr/local/cuda/include/nvtx3/nvToolsExt.h")) GTEST_SKIP() << "toolkit has no nvtx3 headers";
  std::string exe = Compile("nvtx_steps");
  ASSERT_FALSE(exe.empty());
  std::string dir = kWork + "/trace-nvtx", out;
  ASSERT_EQ(Launch("-- " + exe, dir, &out), 0) << out;
  auto ops = ReadRank(dir + "/rank-0.jsonl");
  auto steps = Select(ops, "marker", "name", "ProfilerStep#1");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].Get("phase"), "begin");
  EXPECT_EQ(steps[1].Get("phase"), "end");
  EXPECT_EQ(Select(ops, "marker", "name", "forward").size(), 6u);
  EXPECT_EQ(Select(ops, "marker", "name", "optimizer").size(), 6u);
  EXPECT_EQ(Select(ops, "marker", "phase", "instant").size(), 3u);
  // The kernels sit inside their ranges, in issue order.
  size_t begin = 0, kernel = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!begin && ops[i].Get("name") == "forward") begin = i;
    if (!kernel && ops[i].op() == "kernel") kernel = i;
  }
  EXPECT_LT(begin, kernel);
}

TEST_F(Nvcc, EightDevicesInOneProcess) {
  std::string exe = Compile("nccl_8dev");
  ASSERT_FALSE(exe.empty());
  std::string dir = kWork + "/trace-8dev", out;
  ASSERT_EQ(Launch("-- " + exe, dir, &out), 0) << out;
  std::string comm;
  for (int r = 0; r < 8; ++r) {
    auto ops = ReadRank(dir + "/rank-" + std::to_string(r) + ".jsonl");
    auto init = Select(ops, "comm_init");
    ASSERT_EQ(init.size(), 1u) << "rank " << r;
    EXPECT_EQ(init[0].Int("rank"), r);
    if (r == 0) comm = init[0].Get("comm");
    EXPECT_EQ(init[0].Get("comm"), comm);
    auto ar = Select(ops, "coll", "coll", "allreduce");
    ASSERT_EQ(ar.size(), 5u);
    EXPECT_EQ(ar[4].Int("seq"), 4);
    EXPECT_GT(ar[0].Int("group"), 0);
    EXPECT_EQ(ar[0].Int("bytes"), 128ll << 20);
  }
  std::string m = ReadFile(dir + "/manifest.json");
  EXPECT_NE(m.find("\"rank\":7"), std::string::npos) << m;
}

TEST_F(Nvcc, TwoProcesses) {
  std::string exe = Compile("nccl_2proc");
  ASSERT_FALSE(exe.empty());
  std::string dir = kWork + "/trace-2proc", out;
  ASSERT_EQ(Launch("-n 2 -- " + exe + " " + dir + "/.nccl-unique-id.prog", dir, &out), 0) << out;
  auto r0 = ReadRank(dir + "/rank-0.jsonl"), r1 = ReadRank(dir + "/rank-1.jsonl");
  auto c0 = Select(r0, "coll"), c1 = Select(r1, "coll");
  ASSERT_EQ(c0.size(), 8u);
  ASSERT_EQ(c1.size(), 8u);
  for (size_t i = 0; i < c0.size(); ++i) {
    EXPECT_EQ(c0[i].Get("comm"), c1[i].Get("comm"));
    EXPECT_EQ(c0[i].Int("seq"), c1[i].Int("seq"));
    EXPECT_EQ(c0[i].Get("coll"), c1[i].Get("coll"));
  }
  EXPECT_EQ(c0[1].Get("coll"), "allgather");
  EXPECT_EQ(c0[1].Int("bytes"), 2ll << 20);  // receive buffer: 2 ranks x 512 Ki bf16
}

TEST_F(Nvcc, NcclTestsStyleSweep) {
  std::string exe = Compile("nccl_tests_style");
  ASSERT_FALSE(exe.empty());
  std::string dir = kWork + "/trace-sweep", out;
  ASSERT_EQ(Launch("-- " + exe, dir, &out), 0) << out;
  EXPECT_NE(out.find("ok"), std::string::npos) << out;
  auto ops = ReadRank(dir + "/rank-0.jsonl");
  // Sizes 1 KiB .. 64 MiB in x16 steps: 1K, 16K, 256K, 4M, 64M; 1 warm-up + 5 timed each.
  EXPECT_EQ(Select(ops, "coll", "coll", "allreduce").size(), 5u * 6u);
  EXPECT_GE(Select(ops, "stream_sync").size(), 10u) << "cudaStreamQuery polls are recorded as syncs";
  EXPECT_EQ(Select(ops, "malloc").size(), 2u);
}

}  // namespace

// Live mode with an unmodified nvcc-built program: its own timers (host clock around a
// cudaStreamQuery polling loop, and CUDA events) print the simulated collective time. The
// largest size (64 MiB, where the host's launch time is hidden) agrees with `gpusim collective`
// on the same 2 GPUs within 2 %.
namespace {
int Shell(const std::string& cmd, std::string* out) { return Run(cmd, out); }
}  // namespace

TEST_F(Nvcc, NcclTestsStyleRunsLive) {
  std::string exe = Compile("nccl_tests_style");
  ASSERT_FALSE(exe.empty());
  std::string live, ref;
  ASSERT_EQ(Shell(std::string(GPUSIM_CLI) + " run --servers 1 --gpus 2 --devices-per-process 2 --host-time fixed:1 -- " +
                    exe + " 2>/dev/null",
                &live),
            0)
      << live;
  ASSERT_EQ(Shell(std::string(GPUSIM_CLI) + " collective --servers 1 --gpus-per-server 2 --bytes 64M --quiet", &ref), 0);
  double liveUs = 0, refUs = 0;
  for (const char* p = live.c_str(); (p = strstr(p, "67108864")); ++p) sscanf(p, "67108864 %lf", &liveUs);
  const char* r = strstr(ref.c_str(), "\n    67108864");
  ASSERT_NE(r, nullptr) << ref;
  char algo[16], proto[16];
  unsigned long long count;
  unsigned ch;
  ASSERT_EQ(sscanf(r, " 67108864 %llu float sum -1 %15s %15s %u %lf", &count, algo, proto, &ch, &refUs), 5) << ref;
  ASSERT_GT(liveUs, 0) << live;
  EXPECT_NEAR(liveUs, refUs, 0.02 * refUs) << live << ref;
  EXPECT_NE(live.find("ok"), std::string::npos) << live;
}
