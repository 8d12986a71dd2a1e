/*
 * How NCCL cuts one point-to-point operation (ncclSend / ncclRecv, or one peer of an AllToAll)
 * over its channels, and into protocol steps. From NCCL 2.29.2's source:
 *  - channels per peer: src/graph/paths.cc ncclTopoGetNchannels (2 per NVLink to a local peer,
 *    per network peer the local NICs or NIC GB/s / NCCL_P2P_PER_CHANNEL_NET_BW = 14, rounding
 *    up) and ncclTopoComputeP2pChannels (powers of two; on several nodes halved until every
 *    peer fits one round: perPeer x ceil(nRanks / 8) <= p2p channels);
 *  - the split of one operation: src/enqueue.cc scheduleP2pTasksToPlan (nChannelsMin, halved
 *    while nChannelsMin x nRanks > p2p channels) and addP2pToPlan (parts of at least
 *    chunk/2 (several nodes) or chunk/8 (one node), doubled while a part exceeds chunk (several
 *    nodes) or 32 chunks (one node); LL at most NCCL_P2P_LL_THRESHOLD = 16 KiB per part;
 *    network chunks halved below 8 chunks of data and quartered below one);
 *  - the chunk: src/init.cc computeBuffSizes, NCCL_P2P_NET_CHUNKSIZE = 128 KiB on several
 *    nodes, NCCL_P2P_NVL_CHUNKSIZE = 512 KiB on one NVLink node;
 *  - parts: src/include/device.h ncclP2pPartBounds (ceil(bytes / parts) rounded up to 4 KiB).
 */
#ifndef GPUSIM_NCCL_P2P_H
#define GPUSIM_NCCL_P2P_H

#include <cstdint>

namespace ns3
{
namespace gpusim
{

/// What NCCL's point-to-point split depends on, per communicator.
struct NcclP2pComm
{
    uint32_t nRanks = 1;
    uint32_t nNodes = 1;       //!< servers the communicator spans
    uint32_t p2pChannels = 32; //!< NCCL's p2p channels per rank (a power of two)
    /// Bandwidth of a GPU's path to its NIC (GB/s), for the network channels per peer; 0: no
    /// network peer.
    double netGBps = 0;
};

/// One operation's split.
struct NcclP2pSplit
{
    uint32_t parts = 1;         //!< channels the operation is striped over
    bool ll = false;            //!< NCCL runs it with the LL protocol (small parts)
    uint64_t chunkBytes = 0;    //!< payload of one protocol step of a part
    uint32_t chunksPerPart = 1; //!< steps of the largest part
};

/// NCCL's p2pnChannelsPerPeer for the communicator (the most channels one operation may use).
uint32_t NcclP2pChannelsPerPeer(const NcclP2pComm& c);

/// How NCCL splits an operation of `bytes` to or from one peer; `network`: the peer is reached
/// through the NIC (NCCL's net transport), which tunes the chunk to the size.
NcclP2pSplit NcclSplitP2p(uint64_t bytes, bool network, const NcclP2pComm& c);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_NCCL_P2P_H
