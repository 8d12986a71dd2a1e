/*
 * What the files of PacketBackend (packet-backend.h) share: the "no vertex" mark, the first
 * host address and which topology vertices become ns-3 nodes. Internal: included by relative
 * name from model/ and not staged or installed as an ns3/ header.
 */
#ifndef GPUSIM_PACKET_BACKEND_INTERNAL_H
#define GPUSIM_PACKET_BACKEND_INTERNAL_H

#include "ns3/cluster-topology.h"

#include <cstdint>
#include <limits>

namespace ns3
{
namespace packet_internal
{

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kFirstHostAddress = 0x0a000001; // 10.0.0.1

inline bool
IsPacketVertex(TopoVertexType t)
{
    return t == TopoVertexType::Nic || t == TopoVertexType::Switch;
}

} // namespace packet_internal
} // namespace ns3

#endif // GPUSIM_PACKET_BACKEND_INTERNAL_H
