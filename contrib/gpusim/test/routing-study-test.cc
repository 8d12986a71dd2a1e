// The routing study's key comparisons (doc/routing-study.md), reduced: the same scenario code
// as examples/routing-study.cc (examples/routing-study.h), smaller collectives and model.
#include "../examples/routing-study.h"

#include <gtest/gtest.h>
#include <iostream>

using namespace ns3;
using namespace ns3::routingstudy;

namespace
{

class RoutingStudy : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        Simulator::Destroy();
    }
};

/// Bytes leaf0 sent up to the spines.
double
Leaf0UpBytes(const TrainingResult& r)
{
    double sum = 0;
    for (size_t i = 0; i < r.uplinkBytes.size(); ++i)
    {
        if (r.uplinkNames[i].rfind("leaf0-", 0) == 0)
        {
            sum += r.uplinkBytes[i];
        }
    }
    return sum;
}

} // namespace

// Random spraying reorders packets between the 4 spines; a go-back-N receiver discards what
// overtakes and NACKs, so packets are resent and the AllReduce is slower; the tolerant receiver
// holds them and nothing is resent.
TEST_F(RoutingStudy, SprayingMakesGoBackNRetransmitAndTheTolerantReceiverDoesNot)
{
    CollectiveCase c;
    c.collective = "allreduce";
    c.routing = "spray";
    c.cc = "dcqcn";
    c.bytes = 1 << 20;
    c.shared = true;
    c.reorder = "gbn";
    const CollectiveResult gbn = RunCollective(c);
    c.reorder = "tolerant";
    const CollectiveResult tolerant = RunCollective(c);
    ASSERT_TRUE(gbn.completed);
    ASSERT_TRUE(tolerant.completed);
    std::cout << "  gbn " << gbn.timeUs << " us, " << gbn.retransmitted << " resent; tolerant "
              << tolerant.timeUs << " us, " << tolerant.reordered << " held\n";
    EXPECT_GT(gbn.retransmitted, 0u);
    EXPECT_GT(gbn.outOfOrder, 0u);
    EXPECT_EQ(tolerant.retransmitted, 0u);
    EXPECT_EQ(tolerant.outOfOrder, 0u);
    EXPECT_GT(tolerant.reordered, 0u);
    EXPECT_LT(tolerant.timeUs, gbn.timeUs);
}

// Training on the 2-spine (4:1) fabric: the DP rings' QPs of leaf0 all hash onto one spine
// under ECMP (the other carries nothing), so the iteration is as slow as with one spine;
// adaptive routing (the flow model's merged bundle) uses both and is faster.
TEST_F(RoutingStudy, AdaptiveBeatsCollidingEcmpAndAFailedSpineCostsItsCapacity)
{
    auto job = StudyTraining(StudyModel(2), 16);
    const TrainingResult ecmp = RunTraining(job, TrainingCase{"ecmp", 4, {}, Time(0)});
    const TrainingResult adaptive = RunTraining(job, TrainingCase{"adaptive", 4, {}, Time(0)});
    const TrainingResult down =
        RunTraining(job, TrainingCase{"adaptive", 4, {"spine0@0"}, Time(0)});
    ASSERT_TRUE(ecmp.completed && adaptive.completed && down.completed);
    std::cout << "  ecmp " << ecmp.iterationUs << " us, adaptive " << adaptive.iterationUs
              << " us, adaptive with spine0 down " << down.iterationUs << " us\n";
    // ECMP collided: one of leaf0's two uplinks carried (almost) nothing.
    double lo = 1e300;
    double hi = 0;
    for (size_t i = 0; i < ecmp.uplinkBytes.size(); ++i)
    {
        if (ecmp.uplinkNames[i].rfind("leaf0-", 0) == 0)
        {
            lo = std::min(lo, ecmp.uplinkBytes[i]);
            hi = std::max(hi, ecmp.uplinkBytes[i]);
        }
    }
    ASSERT_GT(hi, 0);
    EXPECT_LT(lo, 0.01 * hi) << "ECMP did not collide";
    EXPECT_LT(adaptive.iterationUs, 0.85 * ecmp.iterationUs);
    // Half the spine capacity lost: leaf0's cross-leaf bytes must now pass one 100 Gbit/s
    // cable, which bounds the iteration from below; intact it had two.
    const double upBytes = Leaf0UpBytes(adaptive);
    EXPECT_NEAR(Leaf0UpBytes(down), upBytes, 1e-6 * upBytes);
    const double oneCableUs = upBytes * 8 / (kGbps * 1e3);
    EXPECT_GE(down.iterationUs, oneCableUs);
    EXPECT_LT(adaptive.iterationUs, oneCableUs);
}

// ECMP on the 4-spine fabric: the cable leaf0's DP traffic uses most goes down mid-iteration;
// its flows stop until the routing converges, so a 50 ms convergence costs 50 ms more than
// an immediate one (the stalled DP ring is on the critical path).
TEST_F(RoutingStudy, EcmpFlowsOnAFailedCableWaitForRoutingConvergence)
{
    auto job = StudyTraining(StudyModel(2), 16);
    const TrainingResult intact = RunTraining(job, TrainingCase{"ecmp", 2, {}, Time(0)});
    ASSERT_TRUE(intact.completed);
    size_t busiest = 0;
    for (size_t i = 0; i < intact.uplinkBytes.size(); ++i)
    {
        if (intact.uplinkNames[i].rfind("leaf0-", 0) == 0 &&
            intact.uplinkBytes[i] > intact.uplinkBytes[busiest])
        {
            busiest = i;
        }
    }
    const std::string item = intact.uplinkNames[busiest] + "@" +
                             std::to_string(int64_t(intact.iterationUs / 2)) + "us";
    const TrainingResult fast = RunTraining(job, TrainingCase{"ecmp", 2, {item}, Time(0)});
    const TrainingResult slow =
        RunTraining(job, TrainingCase{"ecmp", 2, {item}, MilliSeconds(50)});
    ASSERT_TRUE(fast.completed && slow.completed);
    std::cout << "  " << item << ": intact " << intact.iterationUs << " us, convergence 0 "
              << fast.iterationUs << " us, 50 ms " << slow.iterationUs << " us\n";
    EXPECT_NEAR(slow.iterationUs - fast.iterationUs, 50e3, 0.5e3);
}
