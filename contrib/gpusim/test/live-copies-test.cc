// Copies in live mode (gpusim run): the calls that block the host in CUDA wait for the
// simulator, the others return at once, by the same rule the recorder writes as `async`; a
// peer copy crosses NVLink on the network backend. The program is shim/test/live_copies.cc,
// timing itself with steady_clock (simulated time in live mode).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace
{

const std::string kGpusim = std::string(GPUSIM_BIN_DIR) + "/gpusim";
const std::string kCopies = GPUSIM_SHIM_TEST_DIR "/shim_live_copies";

std::string
ReadFile(const std::string& p)
{
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

class LiveCopies : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        struct stat st;
        if (::stat(kCopies.c_str(), &st) != 0)
        {
            GTEST_SKIP() << "the shim's test programs are not built (" << kCopies << ")";
        }
        char t[] = "/tmp/gpusim-live-copies-XXXXXX";
        m_dir = ::mkdtemp(t);
    }

    void TearDown() override
    {
        if (!m_dir.empty())
        {
            std::system(("rm -rf '" + m_dir + "'").c_str());
        }
    }

    /// Runs `cmd` with stdout to a file; returns the exit status, stdout in `out`.
    int Run(const std::string& cmd, std::string& out)
    {
        const std::string file = m_dir + "/stdout";
        int status = std::system((cmd + " >" + file + " 2>" + m_dir + "/stderr").c_str());
        out = ReadFile(file);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

    std::string m_dir;
};

/// kind -> (return_us, done_us) from live_copies' output.
std::map<std::string, std::pair<double, double>>
Times(const std::string& out)
{
    std::map<std::string, std::pair<double, double>> t;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line))
    {
        char kind[16];
        double r = 0;
        double d = 0;
        if (std::sscanf(line.c_str(), "%15s return_us %lf done_us %lf", kind, &r, &d) == 3)
        {
            t[kind] = {r, d};
        }
    }
    return t;
}

} // namespace

TEST_F(LiveCopies, BlockingFollowsCudaAndPeerCopiesCrossNvlink)
{
    const std::string trace = m_dir + "/trace";
    std::string out;
    const std::string cluster = "--servers 1";
    ASSERT_EQ(Run(kGpusim + " run " + cluster + " --gpus 2 --devices-per-process 2 " +
                      "--host-time fixed:1 --out " + trace + " --json " + m_dir +
                      "/live.json -- " + kCopies + " 256",
                  out),
              0)
        << ReadFile(m_dir + "/stderr");
    auto t = Times(out);
    ASSERT_EQ(t.size(), 4u) << out;
    const double bytes = 256.0 * 1024 * 1024;
    // Each API call and clock read costs 1 us of host time (--host-time fixed:1).
    const double slack = 5.0;
    // A synchronous device-to-device copy returns at once; the device finishes it later
    // (read + write through HBM: 1 us + 2 S / (3.35 TB/s * 0.8)).
    const double d2d = 1.0 + 2 * bytes / (3.35e12 * 0.8) * 1e6;
    EXPECT_LT(t["d2d"].first, slack) << out;
    EXPECT_NEAR(t["d2d"].second, d2d, slack) << out;
    // cudaMemcpyPeer returns at once. Without peer access the bytes are staged through host
    // memory at 37 GB/s (HGX H100, P2P disabled); with it they cross GPU0 -> NVSwitch -> GPU1
    // at the copy engines' 376 of NVLink's 450 GB/s (dgx-h100), after the 1 us copy setup,
    // plus two 0.5 us NVLink hops.
    const double staged = 1.0 + bytes / 37e9 * 1e6;
    EXPECT_LT(t["p2p_staged"].first, slack) << out;
    EXPECT_NEAR(t["p2p_staged"].second, staged, slack) << out;
    const double p2p = 1.0 + 2 * 0.5 + bytes / 376e9 * 1e6;
    EXPECT_LT(t["p2p"].first, slack) << out;
    EXPECT_NEAR(t["p2p"].second, p2p, slack) << out;
    // Device to host blocks until the copy is done: 1 us + S over PCIe at 64 GB/s.
    const double d2h = 1.0 + bytes / 64e9 * 1e6;
    EXPECT_NEAR(t["d2h"].first, d2h, slack) << out;
    EXPECT_NEAR(t["d2h"].second, d2h, slack) << out;

    // The recording names the peer copy's ranks, and `gpusim simulate` of it reproduces the run.
    const std::string rank0 = ReadFile(trace + "/rank-0.jsonl");
    EXPECT_NE(rank0.find("\"kind\":\"p2p\""), std::string::npos) << rank0;
    EXPECT_NE(rank0.find("\"src_rank\":0,\"dst_rank\":1"), std::string::npos) << rank0;
    EXPECT_NE(rank0.find("\"staged\":true"), std::string::npos) << "the copy without peer access";
    ASSERT_EQ(Run(kGpusim + " simulate " + trace + " " + cluster + " --json " + m_dir +
                      "/sim.json",
                  out),
              0)
        << ReadFile(m_dir + "/stderr");
    const std::string live = ReadFile(m_dir + "/live.json");
    ASSERT_GT(live.size(), 100u);
    EXPECT_TRUE(live == ReadFile(m_dir + "/sim.json"));
}
