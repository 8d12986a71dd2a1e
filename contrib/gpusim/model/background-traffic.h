/*
 * BackgroundTraffic: traffic that is not a training job (checkpoint writes, storage reads,
 * incast, random flows) started directly on a NetworkBackend next to the jobs. Each generator
 * takes its own owner number on the backend (NetworkBackend::AcquireOwner), so the flow
 * backend's per-owner link bytes say which links it loaded; every flow it starts is recorded
 * (start, delivery, bytes) for flow completion times (FCT) and throughput.
 *
 * Patterns (BackgroundSpec, text form "KIND:key=value,..."; ParseBackgroundSpec):
 *   bulk     every source GPU to every destination GPU (pairs with src == dst skipped) `bytes`
 *            per flow from `start`; with `rate` each flow is paced: chunk k of `chunk` bytes
 *            starts at k x chunk / rate, or when chunk k-1 is delivered if that is later (one
 *            chunk in flight, as one rate-limited connection: a network slower than the rate
 *            gives the flow its fair share, it never piles chunks up); without, one transfer
 *            per flow as fast as the network allows. `count` rounds `period` apart (open loop:
 *            a round starts on time whether or not the previous one finished).
 *   incast   every source GPU to the one destination GPU, `bytes` each, all at the same instant;
 *            `count` rounds `period` apart from `start`.
 *   poisson  `count` flows (or flows until `stop`) with exponential inter-arrival times of mean
 *            `interval` from `start`; each goes between a (source, destination) pair drawn
 *            uniformly and has a size drawn uniformly from the `bytes` list. Seeded
 *            (std::mt19937_64 and its own exponential draw): the same seed gives the same flows
 *            with every standard library.
 */
#ifndef GPUSIM_BACKGROUND_TRAFFIC_H
#define GPUSIM_BACKGROUND_TRAFFIC_H

#include "ns3/network-backend.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

class JsonWriter;

enum class BackgroundPattern
{
    Bulk,
    Incast,
    Poisson,
};

/// "bulk", "incast" or "poisson".
std::string ToString(BackgroundPattern p);

/// One generator as written. GPUs are global GPU numbers (server s, local GPU g: s * G + g).
struct BackgroundSpec
{
    BackgroundPattern pattern = BackgroundPattern::Bulk;
    std::string name;           //!< empty: BackgroundTraffic::Add names it KIND<index>
    std::vector<uint32_t> src;  //!< source GPUs
    std::vector<uint32_t> dst;  //!< destination GPUs (incast: exactly one)
    std::vector<uint64_t> bytes; //!< per flow (poisson: the sizes to draw from)
    Time start;                 //!< first flow (relative to the traffic's Install offset)
    double rateBps = 0;         //!< bulk: pacing rate per flow in bit/s; 0: unpaced
    uint64_t chunkBytes = 256 * 1024; //!< bulk with a rate: pacing unit
    Time period;                //!< bulk, incast: time between rounds (count > 1)
    uint32_t count = 1;         //!< bulk, incast: rounds; poisson: flows (0: until `stop`)
    Time interval;              //!< poisson: mean inter-arrival time
    Time stop;                  //!< poisson: no flow starts after it (0: none; needs count)
    uint64_t seed = 1;          //!< poisson
    std::string text;           //!< the item it was parsed from (error messages)
};

/// Parses one generator: "KIND:key=value,key=value,..." with KIND bulk, incast or poisson.
/// Keys: name, src, dst (GPU lists "0-7,16"), bytes (4M, 1G; poisson: a list "64K,1M"),
/// start, period, interval, stop (times "1.5ms", "300us"), rate ("100Gbps", "400Mbps"),
/// chunk (bytes), count, seed. A part without '=' continues the previous key's list
/// ("src=0-3,8,dst=9" is src 0-3 and 8). Throws std::invalid_argument "background 'ITEM':
/// ..." naming the bad part: unknown kind or key, bad number, size, time or rate, a key
/// given twice or one the kind does not take, a missing required key (src, dst, bytes;
/// poisson also interval and count or stop), count > 1 without a period.
BackgroundSpec ParseBackgroundSpec(const std::string& item);

/// The spec in the text form ParseBackgroundSpec reads.
std::string ToText(const BackgroundSpec& spec);

/// One flow of a generator: `bytes` from src to dst (paced bulk: all its chunks).
struct BackgroundFlow
{
    uint32_t generator = 0;
    uint32_t round = 0; //!< bulk, incast: the round; poisson: the flow's number
    uint32_t src = 0;
    uint32_t dst = 0;
    uint64_t bytes = 0;
    Time start;         //!< when its first byte was handed to the backend
    Time end;           //!< when its last byte was delivered (completed only)
    bool completed = false;
    uint32_t chunks = 1;     //!< transfers it takes (paced: its chunks)
    uint32_t delivered = 0;  //!< of those, delivered so far

    Time Fct() const
    {
        return end - start;
    }
    /// Achieved throughput bytes * 8 / FCT in Gb/s (0 until completed).
    double Gbps() const;
};

/// What one generator did (completed flows only count in the FCT figures).
struct BackgroundSummary
{
    std::string name;
    std::string kind;
    std::string text;        //!< ToText of its spec
    uint32_t owner = 0;      //!< its owner number on the backend
    uint64_t flows = 0;      //!< flows started
    uint64_t completed = 0;  //!< flows delivered
    uint64_t bytes = 0;      //!< bytes of the completed flows
    Time meanFct;
    Time p50Fct;             //!< nearest-rank percentiles
    Time p99Fct;
    Time maxFct;
    double meanGbps = 0;     //!< mean over completed flows of their throughput
};

/// The summary's fields into an open JSON object: name, kind, spec, owner, flows, completed,
/// bytes, fct_us {mean, p50, p99, max}, mean_gbps.
void WriteSummaryFields(JsonWriter& w, const BackgroundSummary& s);

} // namespace gpusim

class BackgroundTraffic : public Object
{
  public:
    static TypeId GetTypeId();
    BackgroundTraffic();
    ~BackgroundTraffic() override;

    /// Adds a generator (before Install) and returns its index. An empty name becomes
    /// KIND<index> ("bulk0"). Throws std::invalid_argument for a name used twice.
    uint32_t Add(gpusim::BackgroundSpec spec);
    /// ParseBackgroundSpec, then Add.
    uint32_t Add(const std::string& item);
    uint32_t GetNGenerators() const;
    const gpusim::BackgroundSpec& GetSpec(uint32_t generator) const;

    /// Throws std::invalid_argument naming the generator for a GPU >= nGpus, an incast
    /// receiver that is also a sender, or a bulk / poisson generator with no pair of distinct
    /// GPUs.
    void Validate(uint32_t nGpus) const;

    /// Checks the generators on the backend's topology, takes one owner per generator and
    /// schedules their flows at offset + start (times from the simulator's 0; a time already
    /// past starts now). Call once per simulation, before Simulator::Run(); records of an
    /// earlier simulation are dropped.
    void Install(Ptr<NetworkBackend> backend, Time offset = Seconds(0));
    bool IsInstalled() const;
    /// The generator's owner number on the backend (after Install).
    uint32_t GetOwner(uint32_t generator) const;

    /// Every flow started, in start order per generator.
    const std::vector<gpusim::BackgroundFlow>& GetFlows() const;
    gpusim::BackgroundSummary Summary(uint32_t generator) const;
    std::vector<gpusim::BackgroundSummary> Summaries() const;
    /// The summaries as a JSON array (doc/user-guide.md, "Background traffic").
    void WriteJson(gpusim::JsonWriter& w) const;
    std::string SummaryJson() const;

  protected:
    void DoDispose() override;

  private:
    struct Generator
    {
        gpusim::BackgroundSpec spec;
        uint32_t owner = 0;
        uint64_t nextId = 0;
    };

    void StartRound(uint32_t generator, uint32_t round);
    void StartFlow(uint32_t generator, uint32_t round, uint32_t src, uint32_t dst,
                   uint64_t bytes);
    /// Starts chunk `chunk` of a paced flow.
    void SendChunk(size_t flow, uint32_t chunk);
    void Transfer(size_t flow, uint64_t bytes);
    void OnDelivered(size_t flow, const TransferRecord& rec);

    std::vector<Generator> m_generators;
    Ptr<NetworkBackend> m_backend;
    std::vector<gpusim::BackgroundFlow> m_flows;
    bool m_installed = false;
};

} // namespace ns3

#endif // GPUSIM_BACKGROUND_TRAFFIC_H
