#include "ns3/nccl-p2p.h"

#include <algorithm>
#include <cmath>

namespace ns3
{
namespace gpusim
{

namespace
{

constexpr uint32_t kMaxP2pPerBatch = 8;          // NCCL_MAX_DEV_WORK_P2P_PER_BATCH
constexpr double kPerChannelNetGBps = 14;        // NCCL_P2P_PER_CHANNEL_NET_BW
constexpr uint64_t kLlThresholdBytes = 16384;    // NCCL_P2P_LL_THRESHOLD
constexpr uint64_t kNetChunkBytes = 128 * 1024;  // NCCL_P2P_NET_CHUNKSIZE
constexpr uint64_t kNvlChunkBytes = 512 * 1024;  // NCCL_P2P_NVL_CHUNKSIZE
constexpr uint64_t kPartAlignBytes = 4096;       // ncclP2pPartBounds

uint32_t
Pow2Up(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
    {
        p *= 2;
    }
    return p;
}

uint64_t
DivUp(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

} // namespace

uint32_t
NcclP2pChannelsPerPeer(const NcclP2pComm& c)
{
    const uint32_t channels = std::max<uint32_t>(1, c.p2pChannels);
    if (c.nNodes <= 1)
    {
        // Local peers over NVLink get 2 per NVLink (>= 24 on NVSwitch servers), capped at the
        // p2p channels.
        return channels;
    }
    // The fewest of any peer: a network peer's, at least one per NIC (one per GPU here).
    uint32_t perPeer = static_cast<uint32_t>(
        std::max(1.0, std::ceil(c.netGBps / kPerChannelNetGBps - 1e-9)));
    perPeer = Pow2Up(perPeer);
    const uint32_t rounds = static_cast<uint32_t>(DivUp(c.nRanks, kMaxP2pPerBatch));
    while (perPeer * rounds > channels && perPeer > 1)
    {
        perPeer /= 2;
    }
    return perPeer;
}

NcclP2pSplit
NcclSplitP2p(uint64_t bytes, bool network, const NcclP2pComm& c)
{
    NcclP2pSplit s;
    const uint32_t channels = std::max<uint32_t>(1, c.p2pChannels);
    const uint32_t maxParts = NcclP2pChannelsPerPeer(c);
    uint32_t minParts = maxParts;
    while (uint64_t(minParts) * c.nRanks > channels && minParts > 1)
    {
        minParts /= 2;
    }
    const bool multiNode = c.nNodes > 1;
    const uint64_t step = multiNode ? kNetChunkBytes : kNvlChunkBytes;
    if (bytes == 0)
    {
        s.parts = 1;
        s.chunkBytes = step;
        s.chunksPerPart = 1;
        return s;
    }
    const uint64_t minPart = multiNode ? step / 2 : step / 8;
    const uint64_t maxPart = multiNode ? step : step * 32;
    uint32_t parts = static_cast<uint32_t>(std::min<uint64_t>(minParts, DivUp(bytes, minPart)));
    uint64_t partSize = std::max(minPart, DivUp(bytes, parts));
    while (partSize > maxPart && parts <= maxParts / 2)
    {
        parts *= 2;
        partSize = DivUp(bytes, parts);
    }
    s.parts = parts;
    s.ll = bytes <= uint64_t(parts) * kLlThresholdBytes;
    uint64_t chunk = step;
    if (s.ll)
    {
        // LL's step: its buffer (8 lines x 512 threads x 16 B per slot) carries half payload.
        chunk = 32 * 1024;
    }
    else if (network)
    {
        if (bytes < step)
        {
            chunk /= 4;
        }
        else if (bytes < 8 * step)
        {
            chunk /= 2;
        }
    }
    s.chunkBytes = chunk;
    const uint64_t partBytes =
        std::min(bytes, DivUp(DivUp(bytes, parts), kPartAlignBytes) * kPartAlignBytes);
    s.chunksPerPart = static_cast<uint32_t>(std::max<uint64_t>(1, DivUp(partBytes, chunk)));
    return s;
}

} // namespace gpusim
} // namespace ns3
