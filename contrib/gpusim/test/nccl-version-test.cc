// NCCL's tuner by release (model/nccl-version.h): each expectation read off NVIDIA/nccl's
// src/graph/tuning.cc at the release's tag.
#include "ns3/nccl-version.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace ns3::gpusim;

namespace
{
constexpr int kTree = int(NcclAlgo::Tree);
constexpr int kRing = int(NcclAlgo::Ring);
constexpr int kSimple = int(NcclProto::Simple);
constexpr int kLl = int(NcclProto::LL);
constexpr int kIntra = int(NcclHop::Intra);
constexpr int kInter = int(NcclHop::Inter);
} // namespace

TEST(NcclVersion, ParsesReleasesNcclHad)
{
    uint32_t v = 0;
    EXPECT_TRUE(ParseNcclVersion("2.22.3", v));
    EXPECT_EQ(v, 22203u);
    EXPECT_TRUE(ParseNcclVersion("2.8", v));
    EXPECT_EQ(v, 20800u);
    EXPECT_TRUE(ParseNcclVersion("2.12.12", v));
    EXPECT_EQ(v, 21212u);
    for (const char* bad : {"", "2", "2.7.8", "2.30.1", "3.0.0", "2.22.3+cuda12", "v2.22.3",
                            "2.22.x", "2.222.1"})
    {
        EXPECT_FALSE(ParseNcclVersion(bad, v)) << bad;
    }
    EXPECT_THROW(NcclSelectionFor("2.31", "hopper"), std::invalid_argument);
}

TEST(NcclVersion, TheExecutorsReleaseAddsNothing)
{
    // 2.26.2's constants are the executor's (cluster-spec.cc): no differences, and the caps
    // of the generation.
    for (const char* version : {"", "2.26.2", "2.23.4", "2.29.2"})
    {
        const NcclSelectionModel s = NcclSelectionFor(version, "hopper");
        for (int a = 0; a < kNcclAlgos; ++a)
        {
            for (int p = 0; p < kNcclProtos; ++p)
            {
                EXPECT_EQ(s.baseDeltaUs[a][p], 0.0) << version;
                EXPECT_EQ(s.hopDeltaUs[kIntra][a][p], 0.0) << version;
                EXPECT_EQ(s.hopDeltaUs[kInter][a][p], 0.0) << version;
            }
        }
        EXPECT_DOUBLE_EQ(s.treeChannelGBps[1], 41.4);
        EXPECT_DOUBLE_EQ(s.treeChannelGBps[2], 36.0);
        EXPECT_DOUBLE_EQ(s.ringLl128ChannelGBps[0], 36.7);
        EXPECT_DOUBLE_EQ(s.treeLl128ChannelGBps[2], 29.0);
    }
    const NcclSelectionModel none = NcclSelectionFor("", "");
    EXPECT_EQ(none.treeChannelGBps[1], 0.0);
    EXPECT_EQ(none.ringLl128ChannelGBps[1], 0.0);
}

TEST(NcclVersion, OlderReleasesChargeTheirOwnConstants)
{
    // 2.12.12: tree/Simple baseLat 0 (8.4 in 2.26), hwLat 28 on NVLink and network (4, 14);
    // the ring's Simple network step 28 (14), its LL NVLink step .47 (.6), baseLat ring LL 3.6
    // (6.6); Ampere's perChMaxTreeBw, which Hopper also took; no LL128 caps yet.
    const NcclSelectionModel s = NcclSelectionFor("2.12.12", "hopper");
    EXPECT_DOUBLE_EQ(s.baseDeltaUs[kTree][kSimple], -8.4);
    EXPECT_DOUBLE_EQ(s.hopDeltaUs[kIntra][kTree][kSimple], 24.0);
    EXPECT_DOUBLE_EQ(s.hopDeltaUs[kInter][kTree][kSimple], 14.0);
    EXPECT_DOUBLE_EQ(s.hopDeltaUs[kInter][kRing][kSimple], 14.0);
    EXPECT_NEAR(s.hopDeltaUs[kIntra][kRing][kLl], -0.13, 1e-12);
    EXPECT_NEAR(s.baseDeltaUs[kRing][kLl], -3.0, 1e-12);
    EXPECT_DOUBLE_EQ(s.treeChannelGBps[1], 23.6);
    EXPECT_EQ(s.ringLl128ChannelGBps[1], 0.0);
    // 2.16: the ring's Simple network step 9.6; Hopper's row is still Ampere's.
    const NcclSelectionModel s16 = NcclSelectionFor("2.16.2", "hopper");
    EXPECT_NEAR(s16.hopDeltaUs[kInter][kRing][kSimple], -4.4, 1e-12);
    EXPECT_DOUBLE_EQ(s16.treeChannelGBps[2], 17.8);
    // 2.17: Hopper's own row {38.7, 41.4, 33.0}; 2.19: 36.0 beyond 2 nodes.
    EXPECT_DOUBLE_EQ(NcclSelectionFor("2.17.1", "hopper").treeChannelGBps[2], 33.0);
    EXPECT_DOUBLE_EQ(NcclSelectionFor("2.19.3", "hopper").treeChannelGBps[2], 36.0);
    // 2.18.1 has no LL128 caps, 2.18.3 does.
    EXPECT_EQ(NcclSelectionFor("2.18.1", "ampere").ringLl128ChannelGBps[1], 0.0);
    EXPECT_DOUBLE_EQ(NcclSelectionFor("2.18.3", "ampere").ringLl128ChannelGBps[1], 20.0);
    // 2.22.3: still tree/Simple at 28 us per hop with baseLat 0; everything else as 2.26.
    const NcclSelectionModel s22 = NcclSelectionFor("2.22.3", "hopper");
    EXPECT_DOUBLE_EQ(s22.baseDeltaUs[kTree][kSimple], -8.4);
    EXPECT_DOUBLE_EQ(s22.hopDeltaUs[kIntra][kTree][kSimple], 24.0);
    EXPECT_EQ(s22.hopDeltaUs[kInter][kRing][kSimple], 0.0);
    EXPECT_EQ(s22.baseDeltaUs[kRing][kLl], 0.0);
    // Ampere up to 2.9: {24.0, 22.5, 16.0}.
    EXPECT_DOUBLE_EQ(NcclSelectionFor("2.8.3", "ampere").treeChannelGBps[1], 22.5);
}
