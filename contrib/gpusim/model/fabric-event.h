/*
 * Fabric events: scheduled failures and degradations of the cluster's links (a cable going
 * down and maybe coming back, a link renegotiating to a lower rate). Written as text items
 * ("leaf0-spine1@1.5ms,up@3ms", "leaf0-spine0=50%@0"), resolved against a ClusterTopology
 * into directed link ids, and applied at their times by a NetworkBackend
 * (NetworkBackend::ScheduleFabricEvents). See doc/flow-backend.md, "Failures, degradation and
 * stragglers".
 */
#ifndef GPUSIM_FABRIC_EVENT_H
#define GPUSIM_FABRIC_EVENT_H

#include "ns3/nstime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

class ClusterTopology;

namespace gpusim
{

enum class FabricEventKind : uint8_t
{
    LinkDown, //!< the links stop carrying anything
    LinkUp,   //!< the links carry traffic again (at the rate they had before going down)
    LinkRate, //!< the links run at another rate (a fraction of nominal or an absolute rate)
};

/// "down", "up" or "rate".
std::string ToString(FabricEventKind k);

/// One scheduled change as written: the target is named by topology vertex names.
struct FabricEventSpec
{
    FabricEventKind kind = FabricEventKind::LinkDown;
    /// "A-B": the cable(s) between vertices A and B, both directions; "A": every link of
    /// vertex A (a NIC or a switch).
    std::string target;
    Time at;                 //!< when it happens (simulated time, >= 0)
    double rateFraction = 0; //!< LinkRate: fraction of the nominal rate (> 0), or 0
    double rateBps = 0;      //!< LinkRate: absolute rate in bit/s (> 0) when rateFraction is 0
    std::string item;        //!< the text it came from (error messages)
};

/// An event resolved on a topology.
struct FabricEvent
{
    FabricEventKind kind = FabricEventKind::LinkDown;
    Time at;
    std::vector<uint32_t> links; //!< directed link ids (both directions of every cable)
    double rateFraction = 0;     //!< as in FabricEventSpec
    double rateBps = 0;
    std::string what;            //!< the target as written ("leaf0-spine1", "s1/nic0")
};

/// A simulated time: a number with unit s, ms, us or ns ("1.5ms", "300us"), or "0". Throws
/// std::invalid_argument "CONTEXT: ..." when it is not one or is negative.
Time ParseEventTime(const std::string& text, const std::string& context);

/// "TARGET@T" or "TARGET@T,up@T2" (down at T, back up at T2 > T). Throws
/// std::invalid_argument naming the item on bad syntax or when T2 <= T.
std::vector<FabricEventSpec> ParseLinkDown(const std::string& item);

/// "TARGET=RATE@T" or "TARGET=RATE@T,full@T2" with RATE "50%" (of nominal) or an absolute
/// "100Gbps" / "800Mbps" (back to the nominal rate at T2 > T). Throws std::invalid_argument
/// naming the item on bad syntax, a rate <= 0 or T2 <= T.
std::vector<FabricEventSpec> ParseLinkRate(const std::string& item);

/// Resolves targets to directed link ids, sorted by time (stable: same-time events keep their
/// order). Throws std::runtime_error naming the item for an unknown vertex, vertices with no
/// link between them, or a vertex target that is not a NIC or a switch.
std::vector<FabricEvent> ResolveFabricEvents(const std::vector<FabricEventSpec>& specs,
                                             const ClusterTopology& topology);

/// "A-B" for a directed link (its endpoints' names).
std::string LinkName(const ClusterTopology& topology, uint32_t link);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_FABRIC_EVENT_H
