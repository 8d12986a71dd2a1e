// Streams, events, synchronisation and host-thread semantics of the engine (no network).
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

using namespace ns3;
using gpusim::MarkerPhase;

namespace
{

NodeContainer
MakeGpus(uint32_t n)
{
    NodeContainer c;
    gpusim::GpuSpec spec;
    gpusim::LookupGpuSpec("h100-sxm", spec);
    for (uint32_t i = 0; i < n; ++i)
    {
        Ptr<GpuNode> g = CreateObject<GpuNode>();
        g->SetSpec(spec);
        g->SetGpuIndex(i);
        c.Add(g);
    }
    return c;
}

struct SimRun
{
    Ptr<GpuWorkload> w;
    RunReport report;
};

SimRun
Simulate(const JobBuilder& b, uint32_t ranks = 1)
{
    GpuWorkloadHelper h;
    SimRun r;
    r.w = h.Install(b.BuildShared(), MakeGpus(ranks));
    Simulator::Run();
    r.report = r.w->Check();
    return r;
}

/// Start and end (us) of the activities named `name` on rank 0.
std::vector<std::pair<double, double>>
Spans(const Ptr<GpuWorkload>& w, const std::string& name)
{
    std::vector<std::pair<double, double>> v;
    for (const auto& a : w->GetActivities())
    {
        if (a.op->name == name)
        {
            v.push_back({a.start.GetMicroSeconds() * 1.0, a.end.GetMicroSeconds() * 1.0});
        }
    }
    return v;
}

class EngineStreams : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(EngineStreams, KernelsOnOneStreamRunInOrder)
{
    JobBuilder b(1);
    b.Kernel(1, "a", 10).Kernel(1, "b", 20).Kernel(1, "c", 5).SyncStream(1);
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "a")[0], std::make_pair(0.0, 10.0));
    EXPECT_EQ(Spans(r.w, "b")[0], std::make_pair(10.0, 30.0));
    EXPECT_EQ(Spans(r.w, "c")[0], std::make_pair(30.0, 35.0));
    EXPECT_EQ(r.report.endTime, MicroSeconds(35));
}

TEST_F(EngineStreams, IndependentStreamsOverlap)
{
    JobBuilder b(1);
    b.Kernel(1, "a", 10).Kernel(2, "b", 10).SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "a")[0].first, 0.0);
    EXPECT_EQ(Spans(r.w, "b")[0].first, 0.0);
    EXPECT_EQ(r.report.endTime, MicroSeconds(10));
}

TEST_F(EngineStreams, CrossStreamEventWait)
{
    // b on stream 2 must wait for a on stream 1 through the event; c (stream 2, before the
    // wait) need not.
    JobBuilder b(1);
    b.Kernel(2, "c", 3).Kernel(1, "a", 10).RecordEvent(7, 1).WaitEvent(2, 7).Kernel(2, "b", 5);
    b.SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "c")[0].first, 0.0);
    EXPECT_EQ(Spans(r.w, "b")[0].first, 10.0);
}

TEST_F(EngineStreams, WaitCapturesTheLatestRecordOnly)
{
    // The event is re-recorded after the wait was issued: the wait must not be held back by
    // the second record (which follows a long kernel).
    JobBuilder b(1);
    b.Kernel(1, "a", 10).RecordEvent(7, 1).WaitEvent(2, 7).Kernel(2, "b", 1);
    b.Kernel(1, "long", 100).RecordEvent(7, 1).SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "b")[0].first, 10.0);
}

TEST_F(EngineStreams, WaitOnNeverRecordedEventIsANoOp)
{
    JobBuilder b(1);
    b.Kernel(1, "a", 10).WaitEvent(2, 99).Kernel(2, "b", 1).SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "b")[0].first, 0.0);
}

TEST_F(EngineStreams, StreamSyncBlocksTheHostUntilThatStreamDrains)
{
    // Host waits for stream 1 (10 us) but not for stream 2 (100 us); then pays 5 us of host
    // time and launches "after" on stream 3.
    JobBuilder b(1);
    b.Kernel(1, "a", 10).Kernel(2, "slow", 100).SyncStream(1).Host(5).Kernel(3, "after", 1);
    b.SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "after")[0].first, 15.0);
}

TEST_F(EngineStreams, EventSyncBlocksTheHost)
{
    JobBuilder b(1);
    b.Kernel(1, "a", 10).RecordEvent(3, 1).Kernel(1, "b", 50).SyncEvent(3).Kernel(2, "c", 1);
    b.SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "c")[0].first, 10.0);
}

TEST_F(EngineStreams, DeviceSyncWaitsForAllStreams)
{
    JobBuilder b(1);
    b.Kernel(1, "a", 10).Kernel(2, "b", 30).SyncDevice().Kernel(1, "c", 1).SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "c")[0].first, 30.0);
}

TEST_F(EngineStreams, HostTimeIsPaidBetweenLaunches)
{
    JobBuilder b(1);
    b.Host(7).Kernel(1, "a", 1).Host(20).Kernel(1, "b", 1).SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "a")[0].first, 7.0);
    EXPECT_EQ(Spans(r.w, "b")[0].first, 27.0);
}

TEST_F(EngineStreams, LegacyDefaultStreamOrdersAgainstBlockingStreams)
{
    // Stream 0 (legacy) work waits for blocking stream 1; work on stream 1 issued after it
    // waits for stream 0. Non-blocking stream 2 is not ordered.
    JobBuilder b(1);
    b.CreateStream(2, true);
    b.Kernel(1, "s1", 10).Kernel(2, "nb", 10).Kernel(0, "legacy", 5).Kernel(1, "s1b", 1);
    b.Kernel(2, "nb2", 1).SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "legacy")[0].first, 10.0);
    EXPECT_EQ(Spans(r.w, "s1b")[0].first, 15.0);
    EXPECT_EQ(Spans(r.w, "nb2")[0].first, 10.0); // only behind "nb" on its own stream
}

TEST_F(EngineStreams, SynchronousMemcpyBlocksTheHost)
{
    JobBuilder b(1);
    // 64e9 B/s PCIe: 6.4 MB takes 100 us plus 1 us setup.
    b.Memcpy(0, gpusim::MemcpyKind::HostToDevice, 6400000, false).Kernel(1, "after", 1);
    b.SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "after")[0].first, 101.0);
}

TEST_F(EngineStreams, CrossThreadDependency)
{
    JobBuilder b(1);
    b.Thread(0).Host(50).Signal(1);
    b.Thread(1).Wait(1).Kernel(1, "k", 1).SyncDevice();
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(Spans(r.w, "k")[0].first, 50.0);
}

TEST_F(EngineStreams, OutOfMemoryIsReported)
{
    JobBuilder b(1);
    b.Malloc(0x1000, 60ull << 30).Malloc(0x2000, 30ull << 30);
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed);
    ASSERT_EQ(r.report.errors.size(), 1u);
    EXPECT_NE(r.report.errors[0].find("out of memory"), std::string::npos);
    EXPECT_EQ(r.w->GetContext(0)->GetNode()->GetPeakMemoryUsed(), 60ull << 30);
}

TEST_F(EngineStreams, StuckRunIsReportedNotHung)
{
    JobBuilder b(1);
    b.Thread(0).Wait(42); // nobody signals token 42
    SimRun r = Simulate(b);
    EXPECT_FALSE(r.report.completed);
    EXPECT_NE(r.report.stuck.find("token 42"), std::string::npos) << r.report.stuck;
}

TEST_F(EngineStreams, IterationBreakdownFromMarkers)
{
    // Iteration: compute 0-10 on stream 1, a "comm-like" kernel is not communication, so the
    // breakdown is compute 10, idle 5 (host pays 5 us before the end marker after sync).
    JobBuilder b(1);
    b.Marker("ProfilerStep#1", MarkerPhase::Begin).Kernel(1, "k", 10).SyncDevice().Host(5);
    b.Marker("ProfilerStep#1", MarkerPhase::End);
    SimRun r = Simulate(b);
    ASSERT_TRUE(r.report.completed);
    auto its = r.w->GetIterations();
    ASSERT_EQ(its.size(), 1u);
    EXPECT_EQ(its[0].name, "ProfilerStep#1");
    EXPECT_EQ(its[0].end - its[0].start, MicroSeconds(15));
    EXPECT_DOUBLE_EQ(its[0].computeOnlyUs, 10.0);
    EXPECT_DOUBLE_EQ(its[0].idleUs, 5.0);
    EXPECT_DOUBLE_EQ(its[0].commOnlyUs, 0.0);
}

TEST_F(EngineStreams, RooflineGemmTime)
{
    // 8192^3 bf16 GEMM: 2*8192^3 FLOP / (989.5e12 * 0.7) = 1587.4 us.
    JobBuilder b(1);
    b.Gemm(1, 8192, 8192, 8192).SyncDevice();
    GpuWorkloadHelper h;
    h.SetCostModel("ns3::RooflineCostModel");
    Ptr<GpuWorkload> w = h.Install(b.BuildShared(), MakeGpus(1));
    Simulator::Run();
    ASSERT_TRUE(w->Check().completed);
    const auto& a = w->GetActivities().at(0);
    EXPECT_NEAR((a.end - a.start).GetMicroSeconds(), 2.0 * 8192.0 * 8192 * 8192 / (989.5e12 * 0.7) * 1e6, 1.0);
}

TEST_F(EngineStreams, Tf32GemmsRunAtTheTf32TensorCorePeak)
{
    // FP32 data on TF32 tensor cores (cuBLAS TF32 math): 2*4096^3 FLOP at 0.7 of the dense TF32
    // peak, 494.5e12 on an H100 SXM (datasheet: 989 TFLOPS with sparsity), = 397.5 us; plain
    // FP32 runs at 67e12 (2933.6 us). A100: TF32 156e12, FP32 19.5e12.
    gpusim::GpuSpec h100;
    gpusim::GpuSpec a100;
    ASSERT_TRUE(gpusim::LookupGpuSpec("h100-sxm", h100));
    ASSERT_TRUE(gpusim::LookupGpuSpec("a100-sxm", a100));
    EXPECT_EQ(h100.PeakFlops(gpusim::DataType::TF32), 494.5e12);
    EXPECT_EQ(a100.PeakFlops(gpusim::DataType::TF32), 156e12);
    JobBuilder b(1);
    b.Gemm(1, 4096, 4096, 4096, gpusim::DataType::TF32, "tf32").SyncDevice();
    b.Gemm(1, 4096, 4096, 4096, gpusim::DataType::F32, "f32").SyncDevice();
    GpuWorkloadHelper h;
    h.SetCostModel("ns3::RooflineCostModel");
    Ptr<GpuWorkload> w = h.Install(b.BuildShared(), MakeGpus(1));
    Simulator::Run();
    ASSERT_TRUE(w->Check().completed);
    const double flops = 2.0 * 4096 * 4096 * 4096;
    auto us = [&](const std::string& name) {
        auto s = Spans(w, name).at(0);
        return s.second - s.first;
    };
    EXPECT_NEAR(us("tf32"), flops / (494.5e12 * 0.7) * 1e6, 1.0);
    EXPECT_NEAR(us("f32"), flops / (67e12 * 0.7) * 1e6, 1.0);
}

TEST_F(EngineStreams, KernelScaleWhatIf)
{
    JobBuilder b(1);
    b.Kernel(1, "gemm_bf16", 100).Kernel(1, "softmax", 100).SyncDevice();
    GpuWorkloadHelper h;
    h.AddKernelScale("gemm", 0.5);
    Ptr<GpuWorkload> w = h.Install(b.BuildShared(), MakeGpus(1));
    Simulator::Run();
    ASSERT_TRUE(w->Check().completed);
    EXPECT_EQ(w->Check().endTime, MicroSeconds(150));
}

TEST_F(EngineStreams, UnknownCostModelIsRejected)
{
    GpuWorkloadHelper h;
    EXPECT_THROW(h.SetCostModel("ns3::NoSuchModel"), std::invalid_argument);
}
