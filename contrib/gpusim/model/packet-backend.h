/*
 * PacketBackend: packet-level network model on stock ns-3, same interface as FlowBackend.
 *
 * From the ClusterTopology it builds real ns-3 nodes: every NIC vertex becomes a host node (the
 * TCP endpoint of the GPUs behind that NIC) and every fabric switch a forwarding node; every
 * NIC<->switch and switch<->switch link becomes a PointToPoint link at the topology's rate and
 * latency, with a queue disc on each egress port and load-balanced routing (EcmpFlowRouting:
 * per-flow ECMP by default; dmodk, per-packet spraying, flowlets or adaptive by the Routing
 * attribute or the topology's routing).
 * Inter-server transfers run as messages of a PacketTransport (TcpTransport: ns-3 TCP with the
 * chosen congestion control) over persistent connections per (src GPU, dst GPU, flow key).
 * The GPU<->NIC PCIe hops are a fixed latency added at delivery. Intra-server transfers
 * (NVLink/NVSwitch) stay flow-level (an embedded FlowBackend) so they add no packet events.
 * See doc/packet-backend.md.
 */
#ifndef GPUSIM_PACKET_BACKEND_H
#define GPUSIM_PACKET_BACKEND_H

#include "ns3/event-id.h"
#include "ns3/flow-backend.h"
#include "ns3/json-writer.h"
#include "ns3/ipv4-address.h"
#include "ns3/network-backend.h"
#include "ns3/node-container.h"
#include "ns3/packet-transport.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/traced-callback.h"

#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace ns3
{

class QueueDiscItem;
class Packet;
class PointToPointNetDevice;

class FlowMonitor;
class PfcController;
class FlowMonitorHelper;
class NetDevice;
class QueueDisc;
class EcmpFlowRouting;

class PacketBackend : public NetworkBackend
{
  public:
    static TypeId GetTypeId();
    PacketBackend();
    ~PacketBackend() override;

    /// Queue disc names accepted by the QueueDisc attribute.
    static std::vector<std::string> KnownQueueDiscs();

    // ---- NetworkBackend ----
    void SetTopology(Ptr<ClusterTopology> topology) override;
    Ptr<ClusterTopology> GetTopology() const override;
    void StartTransfer(uint64_t id,
                       uint32_t srcGpu,
                       uint32_t dstGpu,
                       uint64_t bytes,
                       uint64_t flowKey,
                       DeliveredCallback done) override;
    std::vector<TransferRecord> InFlight() const override;
    std::string GetName() const override;
    uint64_t GetDeliveredCount() const override;
    /// See ApplyFabricEvent (below) for what the events do here.
    void ScheduleFabricEvents(const std::vector<gpusim::FabricEvent>& events) override;

    // ---- set-up ----
    /// The end-host protocol (default: a TcpTransport). Set before the network is built.
    void SetTransport(Ptr<PacketTransport> transport);
    Ptr<PacketTransport> GetTransport() const;
    /// Installs a default transport by name: "tcp" or "rdma" (std::invalid_argument else).
    void SetTransportProtocol(const std::string& name);
    std::string GetTransportProtocol() const; //!< "tcp", "rdma" or "" (another transport)
    /// Builds the ns-3 network now (otherwise the first StartTransfer does). Attributes and
    /// the transport must be configured before. Throws std::invalid_argument on bad settings.
    void Build();
    bool IsBuilt() const;
    /// First stream for the queue discs' random variables (RED, PIE, COBALT; default 1000), so
    /// that runs are reproducible within one process too. Call before Build. Returns an upper
    /// bound of the streams used (one per directed link).
    int64_t AssignStreams(int64_t stream);

    // ---- the ns-3 network (valid after Build) ----
    Ptr<Node> GetHostNode(uint32_t gpu) const;       //!< node of the GPU's NIC
    Ipv4Address GetHostAddress(uint32_t gpu) const;  //!< that node's address
    NodeContainer GetHostNodes() const;              //!< one per NIC vertex (host order)
    NodeContainer GetSwitchNodes() const;            //!< one per fabric switch vertex
    Ptr<Node> GetVertexNode(uint32_t vertex) const;  //!< null for GPU / NVSwitch vertices
    /// Directed topology links carried by packets (NIC and fabric links), ascending ids.
    const std::vector<uint32_t>& GetPacketLinks() const;
    /// Transmitting device / egress queue disc of a directed link (null if not a packet link).
    Ptr<NetDevice> GetLinkDevice(uint32_t link) const;
    Ptr<QueueDisc> GetLinkQueueDisc(uint32_t link) const;
    Ptr<EcmpFlowRouting> GetRouting(uint32_t vertex) const;
    /// PFC controller of a NIC or switch vertex (null unless the Pfc attribute is on).
    Ptr<PfcController> GetPfcController(uint32_t vertex) const;
    bool IsPfcEnabled() const;
    /// The load-balancing mode every node uses (the Routing attribute, else the topology's
    /// routing name; valid names: EcmpFlowRouting::KnownModes()).
    std::string GetRoutingMode() const;
    uint64_t GetTotalPauses() const; //!< PAUSE frames sent by all switches
    /// Drops every packet that arrives over this directed link from now on (a failed link).
    void FailLink(uint32_t link);

    // ---- distributed runs (packet-backend-distributed.cc) ----
    /// The network is partitioned over MPI processes (gpusim::DistributedEnabled at Build).
    bool IsDistributed() const;
    /// How the network was partitioned ("" when not distributed).
    std::string GetPartitionDescription() const;

    // ---- statistics ----
    struct LinkStats
    {
        uint32_t link = 0;
        std::string from;
        std::string to;
        double bitsPerSec = 0;
        bool switchEgress = false;    //!< false: a host NIC's egress
        uint64_t txBytes = 0;         //!< IP bytes sent (queue disc counter)
        uint64_t txPackets = 0;
        uint64_t drops = 0;           //!< queue disc drops
        uint64_t marks = 0;           //!< ECN CE marks
        uint32_t maxBacklogBytes = 0; //!< over the samples (0 without sampling)
        double meanBacklogBytes = 0;  //!< over the samples
        // PFC (zero unless the Pfc attribute is on), for the sending node's port of the link:
        uint64_t pausesSent = 0;      //!< PAUSE frames the sender sent to its upstream peer
        uint64_t pausesReceived = 0;  //!< PAUSE frames that paused this egress
        double pausedUs = 0;          //!< time this egress was paused
        uint64_t losslessDrops = 0;   //!< lossless packets dropped beyond the headroom
    };
    std::vector<LinkStats> GetLinkStats() const;
    /// Mean utilisation of a packet link over [0, interval] from its byte counter.
    double GetLinkUtilisation(uint32_t link, Time interval) const;
    uint64_t GetTotalDrops() const;
    uint64_t GetTotalMarks() const;
    uint64_t GetRetransmissions() const;
    uint64_t GetStartedCount() const;
    uint64_t GetPacketTransferCount() const; //!< transfers that went through the fabric
    uint64_t GetNvlinkTransferCount() const; //!< intra-server, flow-level
    /// Delivered transfers in delivery order (when RecordTransfers is on).
    const std::vector<TransferRecord>& GetCompletedTransfers() const;

    // Time series, one point per SampleInterval while packet transfers are in flight.
    const std::vector<Time>& GetSampleTimes() const;
    /// Per sample: fraction of the link's rate used during the interval ending at the sample.
    std::vector<double> GetUtilisationSeries(uint32_t link) const;
    /// Per sample: bytes queued in the link's egress queue disc and device.
    std::vector<uint32_t> GetBacklogSeries(uint32_t link) const;
    /// Quantile q in [0,1] of a link's backlog samples (0 without samples).
    double GetBacklogQuantile(uint32_t link, double q) const;
    /// The switch egress link with the largest mean sampled backlog (UINT32_MAX if none).
    uint32_t GetHottestQueueLink() const;

    Ptr<FlowMonitor> GetFlowMonitor() const; //!< null unless EnableFlowMonitor

    /// Everything above as one JSON object (see doc/packet-backend.md for the schema).
    std::string ToJson() const;
    std::string StatsJson() const override { return ToJson(); }
    /// Per owner, the bytes (IP packets) of its transfers' data leaving each packet link's
    /// egress queue (counted from their TransferOwnerTag once a second owner shares the
    /// fabric; before that, every link's bytes as owner 0's).
    std::vector<std::vector<double>> GetOwnerLinkBytes() const override;
    /// Writes PREFIX-links.csv, PREFIX-samples.csv and PREFIX-transfers.csv; with the rdma
    /// transport also PREFIX-qps.csv, with PFC also PREFIX-pfc.csv.
    void WriteCsv(const std::string& prefix) const;
    /// Per sample: each RDMA queue pair's pacing rate (bit/s), queue pairs in id order
    /// (empty unless the transport is RdmaTransport and SampleInterval is set).
    const std::vector<std::vector<float>>& GetQpRateSeries() const;
    void WriteTraceCounters(gpusim::JsonWriter& w) const override;

    /// Signature of the TransferStarted / TransferDelivered trace sources.
    typedef void (*TransferTracedCallback)(const TransferRecord& transfer);

  protected:
    void DoDispose() override;
    /// Packet links: a LinkDown drops every packet on them (both directions) from now on, a
    /// LinkUp stops dropping, a LinkRate sets the devices' DataRate. NVLink links go to the
    /// embedded flow backend; PCIe hops are a fixed latency here (a NIC-wide event's PCIe links
    /// only matter to routing). Throws std::invalid_argument for an event on PCIe links only.
    void ApplyFabricEvent(const gpusim::FabricEvent& event) override;
    /// Recomputes every node's ECMP next hops without the dead links; an in-flight transfer
    /// with no path left fails (FailTransfer).
    void ConvergeRouting() override;

  private:
    /// A packet transfer not yet delivered.
    struct Pending
    {
        TransferRecord rec;
        DeliveredCallback done;
        ConnectionKey key;
        int64_t extraLatencyNs = 0; //!< PCIe hops, added at delivery
        bool failed = false;        //!< its connection gave up
    };

    struct Deliveries
    {
        std::vector<Pending> items;
        EventId event;
    };

    /// Per (src GPU, dst GPU): how transfers between them travel.
    struct PairInfo
    {
        bool packet = false;        //!< through the fabric (else NVLink, flow-level)
        uint32_t srcHost = 0;
        uint32_t dstHost = 0;
        int64_t extraLatencyNs = 0; //!< PCIe hop latencies
    };

    void EnsureBuilt();
    /// A second owner shares the fabric: the transports tag their data with its owner and
    /// every packet link's egress queue counts each owner's bytes (OnOwnerDequeue).
    void StartOwnerTagging();
    void OnOwnerDequeue(uint32_t link, Ptr<const QueueDiscItem> item);
    void BuildQueueDisc(uint32_t link, Ptr<NetDevice> dev, bool switchEgress);
    double PortBufferBytes(uint32_t link) const;
    /// Build(): PFC on the sender's port of `link` (before its IPv4 interface exists).
    void AddPfcPort(uint32_t link, Ptr<NetDevice> dev);
    void BuildRoutes();
    /// The routing avoids this directed link (down when it last converged).
    bool RoutedAround(uint32_t link) const;
    void BuildLinks();         //!< Build(): a PointToPoint link per duplex pair, queues, PFC
    /// Build(): the two devices and the channel of duplex link l (and its reverse).
    void InstallLink(uint32_t l, double bitsPerSec, Time delay, Ptr<NetDevice>& devA,
                     Ptr<NetDevice>& devB);
    /// A packet reaches `dev` over directed `link` at `at`: filed in that instant's bucket.
    void ArriveAt(uint32_t link, Ptr<PointToPointNetDevice> dev, Ptr<Packet> p, Time at);
    void ReceiveArrivals(int64_t t); //!< one instant's arrivals, in directed-link order
    void SortPacketLinks();    //!< Build(): link slots in ascending link id
    void AssignQueueStreams(); //!< Build(): fixed random streams for the AQMs
    const PairInfo& Pair(uint32_t src, uint32_t dst);
    void OnMessage(uint64_t id);
    void OnConnectionFailed(const ConnectionKey& key);
    void EnqueueDelivery(int64_t atNs, Pending p);
    /// Files the deliveries of instant `atNs` (OnMessage's, one nanosecond before it).
    void FileDeliveries(int64_t atNs);
    void OnDeliver(int64_t atNs);
    void StartSampling();
    void Sample();
    bool PacketWorkPending() const;
    // packet-backend-observability.cc: the RDMA and PFC parts of the outputs
    void SampleQpRates();
    void WriteRdmaJson(gpusim::JsonWriter& j) const;
    void WritePfcJson(gpusim::JsonWriter& j) const;
    void WriteRdmaCsv(const std::string& prefix) const;
    uint32_t Backlog(uint32_t k) const;
    // packet-backend-distributed.cc
    void BuildPartition();    //!< Build(): the MPI process of every packet vertex
    void BuildNoticeNodes();  //!< Build(): one node per process for delivery notices
    uint32_t NodeSystemId(uint32_t vertex) const;
    bool IsLocalVertex(uint32_t vertex) const;
    /// The destination's process saw message `id` arrive: tells the others it is delivered
    /// at `atNs` (`leadNs` after now).
    void SendDeliveryNotices(uint64_t id, int64_t atNs, int64_t leadNs);
    void OnDeliveryNotice(Ptr<Packet> p);
    /// Counters of links sent by other processes' nodes come from those processes.
    void SumLinkStats(std::vector<LinkStats>& stats) const;
    uint64_t SumOverProcesses(uint64_t local) const;

    // Attributes
    std::string m_queueName;   //!< switch egress queue disc
    uint32_t m_mtu = 0;        //!< fabric IP MTU
    uint64_t m_bufferBytes = 0;     //!< per switch port; 0 = scaled default
    uint64_t m_hostBufferBytes = 0; //!< host NIC egress FIFO
    double m_kminBytes = 0;    //!< red-ecn lower threshold; 0 = scaled default
    double m_kmaxBytes = 0;    //!< red-ecn upper threshold; 0 = scaled default
    double m_pmax = 0;         //!< red-ecn marking probability at kmax
    double m_stepKBytes = 0;   //!< step-ecn threshold; 0 = scaled default
    Time m_sampleInterval;     //!< 0: no time series
    bool m_flowMonitor = false;
    bool m_recordTransfers = true;
    uint32_t m_ecmpSeed = 0;
    std::string m_routingName; //!< Routing attribute ("" = the topology's routing)
    Time m_flowletGap;         //!< given to every node's routing
    std::string m_flowletPick; //!< random | least-loaded
    int64_t m_streamBase = 0;  //!< first RNG stream for queue discs
    bool m_pfc = false;        //!< PFC on the lossless class (needs the ecn queue disc)

    Ptr<ClusterTopology> m_topology;
    Ptr<PacketTransport> m_transport;
    Ptr<FlowBackend> m_nvlink; //!< intra-server transfers
    bool m_built = false;

    // The network
    std::vector<Ptr<Node>> m_vertexNode;        //!< per topology vertex (null: not a node)
    std::vector<uint32_t> m_vertexHost;         //!< per vertex: host index or UINT32_MAX
    std::vector<Ptr<Node>> m_hosts;             //!< host index -> node
    std::vector<Ipv4Address> m_hostAddr;        //!< host index -> address
    std::vector<Ptr<Node>> m_switches;
    std::vector<uint32_t> m_packetLinks;        //!< directed link ids with devices
    std::vector<int32_t> m_linkSlot;            //!< link id -> index in m_packetLinks or -1
    std::vector<Ptr<NetDevice>> m_linkDev;      //!< per slot: transmitting device
    std::vector<Ptr<QueueDisc>> m_linkQdisc;    //!< per slot: egress queue disc
    bool m_ownerTagging = false;                 //!< several owners: tags on, queues counting
    std::vector<std::vector<double>> m_ownerLinkBytes; //!< [owner][link] (tagged packets)
    std::vector<uint32_t> m_linkIface;          //!< per slot: Ipv4 interface at the sender
    std::vector<bool> m_linkSwitchEgress;       //!< per slot
    std::vector<int32_t> m_linkPfcPort;         //!< per slot: port in the sender's controller
    std::vector<Ptr<PfcController>> m_pfcCtl;   //!< per vertex (null: none)
    std::vector<Ptr<EcmpFlowRouting>> m_routing; //!< per vertex (null: not a node)
    std::unique_ptr<FlowMonitorHelper> m_fmHelper;
    Ptr<FlowMonitor> m_monitor;

    // Transfers
    std::unordered_map<uint64_t, Pending> m_pending;        //!< packet transfers in flight
    std::map<int64_t, Deliveries> m_deliveries;             //!< delivery time (ns) -> transfers
    /// Delivery time (ns) -> transfers whose delivery is filed 1 ns before it (OnMessage).
    std::map<int64_t, std::vector<Pending>> m_toFile;
    std::unordered_map<uint64_t, PairInfo> m_pairs;         //!< (src << 32 | dst) -> info
    std::vector<TransferRecord> m_completed;
    uint64_t m_started = 0;
    uint64_t m_delivered = 0;
    uint64_t m_packetTransfers = 0;
    uint64_t m_nvlinkTransfers = 0;
    uint64_t m_failedInFlight = 0; //!< pending transfers whose connection gave up

    // Sampling
    EventId m_sampleEvent;
    std::vector<Time> m_sampleTimes;
    std::vector<std::vector<float>> m_utilSeries;      //!< per slot
    std::vector<std::vector<uint32_t>> m_backlogSeries; //!< per slot
    std::vector<uint64_t> m_lastSent;                  //!< per slot: bytes at the last sample
    std::vector<std::vector<float>> m_qpRateSeries;    //!< per sample: rate of each QP
    Time m_lastSampleTime;

    struct Arrival
    {
        uint32_t link;
        Ptr<PointToPointNetDevice> dev;
        Ptr<Packet> p;
    };
    std::map<int64_t, std::vector<Arrival>> m_arrivals; //!< per instant (time steps)
    std::vector<std::map<int64_t, std::vector<Arrival>>::node_type> m_spareArrivals;

    // Distributed runs
    bool m_distributed = false;          //!< partitioned over MPI processes
    uint32_t m_rank = 0;                 //!< this process
    std::vector<uint32_t> m_vertexRank;  //!< per vertex: the process owning its node
    std::vector<Ptr<Node>> m_noticeNodes; //!< per process: receives delivery notices
    int64_t m_minNoticeLeadNs = 0;       //!< PCIe hops of the shortest packet route's ends
    int64_t m_maxCrossLinkNs = 0;        //!< longest link between processes (ns)
    std::string m_partition;             //!< GetPartitionDescription

    TracedCallback<const TransferRecord&> m_startedTrace;   //!< StartTransfer was called
    TracedCallback<const TransferRecord&> m_deliveredTrace; //!< a transfer was delivered
};

} // namespace ns3

#endif // GPUSIM_PACKET_BACKEND_H
