// NCCL's split of a point-to-point operation over its p2p channels (model/nccl-p2p.h), each
// case derived by hand from NCCL 2.29.2's source (src/enqueue.cc addP2pToPlan and
// scheduleP2pTasksToPlan, src/graph/paths.cc ncclTopoGetNchannels / ncclTopoComputeP2pChannels).
#include "ns3/nccl-p2p.h"

#include <gtest/gtest.h>

using namespace ns3::gpusim;

namespace
{

NcclP2pComm
Comm(uint32_t nRanks, uint32_t nNodes, double netGBps = 0)
{
    NcclP2pComm c;
    c.nRanks = nRanks;
    c.nNodes = nNodes;
    c.p2pChannels = 32;
    c.netGBps = netGBps;
    return c;
}

} // namespace

TEST(NcclP2p, ChannelsPerPeerFollowNcclsTopology)
{
    // One node: every peer is an NVLink peer (2 per NVLink, >= 24 on NVSwitch): all 32.
    EXPECT_EQ(NcclP2pChannelsPerPeer(Comm(8, 1)), 32u);
    // 2 x 8 GPUs, 400 Gb/s NICs: ceil(50 / 14) = 4 per network peer; 4 x ceil(16 / 8) <= 32.
    EXPECT_EQ(NcclP2pChannelsPerPeer(Comm(16, 2, 50)), 4u);
    // 200 Gb/s: ceil(25 / 14) = 2. 100 Gb/s: one per NIC.
    EXPECT_EQ(NcclP2pChannelsPerPeer(Comm(16, 2, 25)), 2u);
    EXPECT_EQ(NcclP2pChannelsPerPeer(Comm(16, 2, 12.5)), 1u);
    // 80 ranks: 4 x 10 rounds > 32, halved to 2 (2 x 10 <= 32); 512 ranks: 4 x 64 > 32 down to 1.
    EXPECT_EQ(NcclP2pChannelsPerPeer(Comm(80, 10, 50)), 2u);
    EXPECT_EQ(NcclP2pChannelsPerPeer(Comm(512, 64, 50)), 1u);
}

TEST(NcclP2p, OneNodeSplitsIntoPartsOf512KiBSteps)
{
    const NcclP2pComm c = Comm(8, 1);
    // nChannelsMin: 32 -> 4 (4 x 8 ranks <= 32). 4 MiB to a peer (a 32 MiB AllToAll): 4 parts
    // of 1 MiB, 2 steps of 512 KiB each.
    NcclP2pSplit s = NcclSplitP2p(4 << 20, false, c);
    EXPECT_EQ(s.parts, 4u);
    EXPECT_FALSE(s.ll);
    EXPECT_EQ(s.chunkBytes, 512u * 1024);
    EXPECT_EQ(s.chunksPerPart, 2u);
    // 128 MiB: 4 parts of 32 MiB exceed 32 steps (16 MiB): 8 parts of 16 MiB, 32 steps.
    s = NcclSplitP2p(128ull << 20, false, c);
    EXPECT_EQ(s.parts, 8u);
    EXPECT_EQ(s.chunksPerPart, 32u);
    // 2 GiB: doubled up to all 32 channels, 64 MiB parts of 128 steps.
    s = NcclSplitP2p(2ull << 30, false, c);
    EXPECT_EQ(s.parts, 32u);
    EXPECT_EQ(s.chunksPerPart, 128u);
    // 64 KiB: one part (the smallest part is 64 KiB), Simple, one step. 16 KiB: LL.
    s = NcclSplitP2p(64 << 10, false, c);
    EXPECT_EQ(s.parts, 1u);
    EXPECT_FALSE(s.ll);
    EXPECT_EQ(s.chunksPerPart, 1u);
    EXPECT_TRUE(NcclSplitP2p(16 << 10, false, c).ll);
}

TEST(NcclP2p, NetworkChunksShrinkWithTheOperation)
{
    // 10 x 8 ranks: 2 channels per peer, nChannelsMin 1. 32 MiB / 80 = 419,430 B: one part
    // exceeds 128 KiB, so 2 parts of 209,715 B (212,992 after 4 KiB alignment); under 8 steps
    // of data the network chunk is halved to 64 KiB: 4 steps. Over NVLink, 128 KiB: 2 steps.
    const NcclP2pComm c = Comm(80, 10, 50);
    NcclP2pSplit s = NcclSplitP2p(419430, true, c);
    EXPECT_EQ(s.parts, 2u);
    EXPECT_EQ(s.chunkBytes, 64u * 1024);
    EXPECT_EQ(s.chunksPerPart, 4u);
    EXPECT_EQ(NcclSplitP2p(419430, false, c).chunksPerPart, 2u);
    // Below one step (100 KiB) a quarter: 32 KiB. 1 MiB and more: 128 KiB.
    EXPECT_EQ(NcclSplitP2p(100 << 10, true, c).chunkBytes, 32u * 1024);
    EXPECT_EQ(NcclSplitP2p(1 << 20, true, c).chunkBytes, 128u * 1024);
    // LL up to 16 KiB per part.
    EXPECT_TRUE(NcclSplitP2p(16 << 10, true, c).ll);
    EXPECT_FALSE(NcclSplitP2p((16 << 10) + 1, true, c).ll);
}
