/*
 * NCCL in the simulator.
 *  - NcclWorld: all communicators of one job, the tuning knobs (algorithm, protocol, channels,
 *    efficiency) as Attributes, and the CollectiveCompleted trace source.
 *  - Communicator: members (comm rank -> GPU), topology-aware ring orders per channel, the
 *    running collective instances (matched across ranks by sequence number) and P2P matching.
 *  - NcclCollective: the Application a rank uses for one communicator; streams launch
 *    collectives through it.
 * Algorithms (ring, chain, double binary tree, NVLS, NVLSTree, direct all-to-all, P2P) run as
 * step graphs (nccl-algorithms.h): a step starts when the data it depends on has arrived from
 * the peer, so skew between ranks is modelled rather than assumed away. The code is split the
 * way NCCL's is: this API and the transfers (nccl-collective.cc), the algorithms
 * (nccl-algorithms.cc), the rings and trees over the topology (nccl-topology.cc) and the
 * tuner that picks algorithm, protocol and channels (nccl-tuner.cc). See doc/design.md.
 */
#ifndef GPUSIM_NCCL_COLLECTIVE_H
#define GPUSIM_NCCL_COLLECTIVE_H

#include "ns3/application.h"
#include "ns3/nccl-calibration.h"
#include "ns3/nccl-p2p.h"
#include "ns3/network-backend.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/op-ir.h"
#include "ns3/traced-callback.h"

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ns3
{

class NcclWorld;
class CollectiveExecutor;
struct RingConn;

class FlowBackend;

/// How a transfer starts on its connection.
enum class StepStart : uint8_t
{
    Fresh,     //!< waits the protocol's step latency
    Pipelined, //!< streams behind an earlier step of the connection: no step latency
    Streamed,  //!< continues the line-by-line stream (LL) of the connection's first transfer,
               //!< which already paid the step and the path latency: neither again
};

/// How one collective is executed.
struct CollectivePlan
{
    std::string algo;  //!< ring | tree | nvls | nvlstree | chain | direct | p2p
    std::string proto; //!< simple | ll128 | ll
    uint32_t channels = 1;
    /// Payload bytes per wire byte from the protocol (and its LL cap); a transfer's wire bytes
    /// are payload / (bwFactor x the efficiency of its link class below).
    double bwFactor = 1.0;
    double nvlinkEfficiency = 1.0; //!< GPU <-> GPU inside a server
    double netEfficiency = 1.0;    //!< between servers
    double nvlsEfficiency = 1.0;   //!< GPU <-> NVSwitch (NVLS)
    Time stepLatency;              //!< latency of a step inside a server (NVLink, NVSwitch)
    Time stepLatencyInter;         //!< latency of a step between servers
    bool hopIncludesWire = false;  //!< step latencies include the route's wire latency
    Time baseLatency;              //!< launch latency paid once per rank
    uint32_t pipelineDepth = 1;
    uint64_t chunkBytes = 0; //!< largest bytes one step moves on one channel
    uint32_t loops = 1;      //!< NVLS/NVLSTree: loops the data is cut into
    /// Point-to-point traffic (AllToAll, Send/Recv) between servers leaves through the NIC on
    /// the peer's rail, reached over NVLink (NCCL's PXN)
    bool pxn = false;
    /// Send / Recv / AllToAll in one copy into the peer's buffer (gpusim::kCollOneCopy): no
    /// copy out of NCCL's FIFO (NcclWorld P2pCopyOut)
    bool oneCopy = false;
    double estimateUs = 0;   //!< planner's closed-form estimate (for auto selection)
    /// What NCCL's tuner of the cluster's release compares for this choice: estimateUs with
    /// the release's latency constants and channel caps (model/nccl-version.h) and the
    /// network plugin's reported latency; estimateUs where none differs.
    double selectionUs = 0;
};

/// Shape of a ring collective (AllReduce: 2(n-1) steps, AllGather/ReduceScatter: n-1) as the
/// chunk-level executor runs it: `loops` x `steps` items per position and channel.
struct RingShape
{
    uint32_t steps = 0;
    uint32_t loops = 1;
    double itemBytes = 0; //!< payload of one item
};
RingShape MakeRingShape(gpusim::CollKind kind, uint64_t bytes, uint32_t n,
                        const CollectivePlan& plan);

/// One tree of a tree collective, over comm ranks.
struct CollectiveTree
{
    std::vector<int32_t> parent;                //!< by comm rank, -1 = root
    std::vector<std::vector<uint32_t>> children; //!< by comm rank
};

/// How a collective ran (NcclWorld Fidelity, doc/flow-backend.md).
enum class CollectivePath : uint8_t
{
    Chunk,     //!< chunk by chunk through the backend (the detailed model)
    Replayed,  //!< completion times of an earlier isolated run of the same op (no transfers)
    EdgeFlows, //!< ring as one flow per edge and channel, latencies in closed form
    TrialLoops, //!< NVLS/NVLSTree: some loops chunk by chunk, the rest extrapolated (approximate)
    OneRail     //!< NVLS/NVLSTree: one GPU per server and its rail, chunk by chunk, stand for
                //!< every GPU and rail (exact where the rails are disjoint and alike)
};

/// Why a collective ran chunk by chunk.
enum class ChunkReason : uint8_t
{
    None,     //!< it did not (CollectivePath other than Chunk)
    Forced,   //!< Fidelity=chunk
    Backend,  //!< not the flow backend: no shortcut applies
    Learning, //!< no edge-flow form (tree, NVLS, AllToAll, ...); run to learn it for replay
    Skew,     //!< its ranks did not join within FidelitySkew (auto: at one instant)
    Busy,     //!< its links were busy or reserved, or another collective open on a member GPU
    Conflict, //!< an earlier shortcut of the op met other traffic: chunk level from then on
    Count
};
const char* ToString(CollectivePath p);
/// A short key: "forced", "backend", "learning", "skew", "busy", "conflict".
const char* ToString(ChunkReason r);
/// Why, in words (for reports): "ranks did not join together", ...
const char* Describe(ChunkReason r);

/// What the job reports for each finished collective.
struct CollectiveRecord
{
    std::string comm;
    uint64_t seq = 0;
    gpusim::CollKind kind = gpusim::CollKind::AllReduce;
    uint64_t bytes = 0; //!< as in the op (nccl-tests "size")
    gpusim::DataType dtype = gpusim::DataType::F32;
    uint32_t nranks = 0;
    CollectivePlan plan;
    std::vector<uint32_t> gpus;  //!< GPU of each comm rank
    std::vector<Time> rankJoin;  //!< when each comm rank launched it
    std::vector<Time> rankDone;  //!< when it completed on each comm rank
    uint64_t transfers = 0;
    CollectivePath path = CollectivePath::Chunk; //!< how it ran
    ChunkReason chunkReason = ChunkReason::Forced; //!< why chunk by chunk (path Chunk)
    Time FirstJoin() const;
    Time LastJoin() const;
    Time End() const;
};

class Communicator : public Object
{
  public:
    static TypeId GetTypeId();
    Communicator();
    ~Communicator() override;

    void Setup(NcclWorld* world, const std::string& id, uint32_t nranks);
    const std::string& GetId() const;
    uint32_t GetNRanks() const;
    void SetMember(uint32_t commRank, uint32_t gpu);
    bool IsComplete() const; //!< every comm rank has a GPU
    uint32_t GpuOf(uint32_t commRank) const;
    const std::vector<uint32_t>& Gpus() const;
    /// Number of distinct servers among the members.
    uint32_t NumServers() const;

    /// Members grouped by server, each server's comm ranks ordered by local GPU index and
    /// rotated by `rotation`.
    std::vector<std::vector<uint32_t>> ServerGroups(uint32_t rotation) const;
    /// Ring order (comm ranks) for a channel: servers one after another (NVLink inside a
    /// server), rotated per channel so channels leave through different NICs, alternating
    /// direction so every inter-server hop stays on one rail.
    std::vector<uint32_t> RingOrder(uint32_t channel) const;
    /// Double binary trees, one per channel (see doc/design.md).
    std::vector<CollectiveTree> Trees(uint32_t channels) const;

    /// ECMP flow key of a point-to-point send from comm rank `src` to comm rank `dst` (the
    /// same for every communicator: the route differs by the GPU pair the hash mixes in).
    static uint64_t P2pFlowKey(uint32_t src, uint32_t dst);
    /// Rank `commRank` launches `op`; done() runs when its part completes. A Send / Recv goes
    /// to comm rank (op->peer + peerShift) mod n (NcclCollective::SetPeerShift).
    void Post(uint32_t commRank, const gpusim::Op* op, std::function<void()> done,
              uint32_t peerShift = 0);

    /// Starts a transfer between executor nodes (comm ranks; node n + s is the NVSwitch of
    /// server group s) with the plan's wire factor and step latency; a `pipelined` step streams
    /// behind an earlier one of its connection and pays no step latency.
    void Send(const CollectivePlan& plan,
              uint32_t fromNode,
              uint32_t toNode,
              double payloadBytes,
              uint64_t flowKey,
              StepStart start,
              std::function<void()> delivered);
    /// What NCCL's point-to-point split depends on (model/nccl-p2p.h), computed once the
    /// members are known.
    const gpusim::NcclP2pComm& P2pComm() const;
    /// Members grouped by server (ServerGroups(0)) when every server has the same number of
    /// them (>= 2) and all reach an NVSwitch; empty otherwise (no NVLS possible).
    std::vector<std::vector<uint32_t>> NvlsGroups() const;

    bool HasPending() const;
    std::string DescribePending() const;

  protected:
    void DoDispose() override;

  private:
    /// Collective-level fidelity (NcclWorld Fidelity=collective, doc/flow-backend.md): what one
    /// (kind, bytes, dtype, root) on this communicator learnt from its detailed runs.
    struct MemoEntry
    {
        enum class State : uint8_t
        {
            Learn, //!< next instance runs detailed and records the links it uses
            Watch, //!< next lockstep instance on idle links runs detailed, watched for isolation
            Fast,  //!< lockstep instances on idle links replay the watched run's timings
            Never  //!< a replay met foreign traffic: detailed from now on
        };
        State state = State::Learn;
        CollectivePlan plan;
        std::vector<uint32_t> links;     //!< directed links its transfers cross (sorted)
        std::vector<uint64_t> ownStarts; //!< flows one instance starts on each of `links`
        std::vector<Time> done;          //!< per comm rank: completion after the start
        Time span;                       //!< largest of `done` (Learn: of its run)
        uint64_t transfers = 0;
        // RingFlows (ring AllReduce/AllGather/ReduceScatter, and NVLS / NVLSTree AllReduce):
        // the links of all edge flows.
        std::vector<uint32_t> ringLinks; //!< sorted; empty until first needed
        std::vector<uint64_t> ringOwn;   //!< ring edge flows crossing each of ringLinks
        bool ringConflict = false;       //!< an edge-flow run met other traffic: chunk level
        // NVLS / NVLSTree by one rail (nccl-nvls-flows.cc), set with ringLinks:
        std::vector<uint64_t> railOwn; //!< flows of one loop of the first rail on each ringLink
        bool railsAlike = false; //!< every rail's links are its own and alike the first's
    };
    /// kind, bytes, dtype, root, one copy (gpusim::kCollOneCopy)
    using MemoKey = std::tuple<int, uint64_t, int, int32_t, bool>;
    using SentCounts = std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint64_t>;
    enum class Mode : uint8_t
    {
        Chunk,     //!< Fidelity=chunk: the executor from the first join on
        Undecided, //!< collective fidelity, before the first rank's executor join
        Learn,
        Watch,
        Fast,
        Fluid,   //!< RingFlows: one flow per ring edge and channel, latencies in closed form
        Detailed //!< collective fidelity, but not replayable this time
    };

    /// RingFlows: the ring one instance runs and what its edge flows measured. Edge e is
    /// channel e / n, position e % n (sending to the next position of that channel's order).
    struct FluidRing
    {
        std::vector<std::vector<uint32_t>> orders; //!< per channel, comm ranks
        uint32_t items = 0;                        //!< items each position sends
        uint32_t steps = 0;                        //!< items of the first loop (pay step latency)
        std::vector<double> stepNs;                //!< per edge: step latency of a first-loop item
        std::vector<double> latNs;                 //!< per edge: route latency
        std::vector<double> endNs;                 //!< per edge: its flow's delivery after start
        uint32_t pending = 0;                      //!< edge flows not yet delivered
    };

    /// NVLS / NVLSTree with NvlsTrialLoops (nccl-nvls-flows.cc): the executor runs `trial` of
    /// the op's `loops` loops chunk by chunk; per rank, when the multicast of loop `a`, `b`
    /// and of the last trial loop arrived (after the start).
    struct FluidNvls
    {
        uint32_t loops = 0; //!< the op's loops
        uint32_t trial = 0; //!< loops run chunk by chunk
        uint32_t a = 0;     //!< first loop of the steady-state window
        uint32_t b = 0;     //!< its last loop
        std::vector<uint32_t> received; //!< per comm rank: loops delivered so far
        std::vector<double> atA, atB, last;
        uint32_t pending = 0;  //!< ranks whose last trial loop has not arrived
        uint64_t perLoop = 0;  //!< transfers of one loop
        bool oneRail = false;  //!< OneRail: the first GPU of each server stands for its server
        std::vector<std::vector<uint32_t>> groups; //!< OneRail: comm ranks by server
    };

    struct Instance
    {
        CollectiveRecord record;
        std::unique_ptr<CollectiveExecutor> exec;
        uint32_t joined = 0;
        uint32_t done = 0;
        std::vector<std::function<void()>> doneCbs;
        // Collective-level fidelity only:
        const gpusim::Op* op = nullptr;
        Mode mode = Mode::Chunk;
        MemoEntry* memo = nullptr;
        Time start;                  //!< when the mode was decided
        uint32_t execJoined = 0;     //!< executor joins so far (their ranks in execJoin)
        std::vector<bool> execJoin;  //!< per comm rank: its executor join has come
        EventId deadline;            //!< end of the wait for the last rank (replays)
        std::vector<uint64_t> snap;  //!< flow starts on memo->links at `start`
        SentCounts sent;             //!< Learn / Watch: transfers by (src, dst, flow key)
        std::unique_ptr<FluidRing> ring; //!< Fluid ring only
        std::unique_ptr<FluidNvls> nvls; //!< Fluid NVLS / NVLSTree only
        uint64_t ownScale = 1;           //!< Fluid: own flows on each link = ringOwn x this
    };
    /// RingFlows applies to this op (ring AllReduce/AllGather/ReduceScatter, depth 1, flows).
    bool RingFlowsApply(const MemoEntry& m, const gpusim::Op& op) const;
    /// RingFlows: all ranks joined; runs the edge flows if the ring's links are idle.
    void StartRingFlows(uint64_t seq, Instance& inst);
    /// RingFlows: edge flow `e` delivered; the last one fixes every rank's completion.
    void RingFlowDelivered(uint64_t seq, uint32_t e);
    /// NVLS loops in closed form apply (NVLS / NVLSTree AllReduce, depth 1, RingFlows on).
    bool NvlsFlowsApply(const MemoEntry& m, const gpusim::Op& op) const;
    /// NVLS: all ranks joined; runs the trial loops if the op's links are idle.
    void StartNvlsFlows(uint64_t seq, Instance& inst);
    /// NVLS: loop delivered to comm rank r; the last trial loop of the last rank fixes every
    /// rank's completion.
    void NvlsLoopDelivered(uint64_t seq, uint32_t r);
    /// NVLS: the directed links of every connection and its flows per loop on each; whether
    /// the rails are disjoint and alike (MemoEntry::railsAlike).
    void NvlsLinks(MemoEntry& m);
    /// NVLS: all ranks joined and the rails alike; runs the first rail chunk by chunk if the
    /// op's links are idle.
    void StartNvlsRail(uint64_t seq, Instance& inst);
    /// NVLS shortcuts: the op's link snapshot, path and reservation before the executor runs.
    void BeginNvlsFluid(Instance& inst, const MemoEntry& m, CollectivePath path,
                        uint32_t ownScale);
    /// Wire bytes of a transfer of `payloadBytes` between backend endpoints (protocol and
    /// link efficiency).
    uint64_t WireBytes(const CollectivePlan& plan, uint32_t src, uint32_t dst,
                       double payloadBytes) const;
    /// Delay before a transfer between backend endpoints starts (the step latency; 0 when
    /// pipelined).
    Time StepDelay(const CollectivePlan& plan, uint32_t src, uint32_t dst, bool pipelined) const;
    /// The step latency of an NVLS/NVLSTree transfer between two executor nodes (comm ranks
    /// or the switches above them): StepDelay of a fresh step.
    std::function<Time(uint32_t, uint32_t)> NvlsLatency(const CollectivePlan& plan) const;
    /// Per channel and ring position, the connection to the next position: its slots, step
    /// and wire latency (PipelineExecutor); empty where every connection has one slot.
    std::vector<std::vector<RingConn>> RingConns(const CollectivePlan& plan) const;
    /// Collective fidelity: comm rank r's executor join (after the base latency).
    void ExecJoin(uint64_t seq, uint32_t commRank);
    /// Collective fidelity: picks how instance `seq` runs (see MemoEntry::State).
    void Decide(uint64_t seq, Instance& inst);
    /// Collective fidelity: the ranks did not all join within the skew allowed for a replay.
    void GiveUpWaiting(uint64_t seq);
    /// Collective fidelity: builds the executor and joins the ranks whose join has come;
    /// `why` (Mode::Detailed, Learn, Watch): recorded and counted.
    void StartDetailed(uint64_t seq, Instance& inst, Mode mode, ChunkReason why);
    /// Collective fidelity: the last rank finished; updates the memo entry.
    void FinishCollectiveLevel(Instance& inst);
    struct P2pPost
    {
        const gpusim::Op* op;
        Time posted;
        std::function<void()> done;
    };

    void FinishRank(uint64_t seq, uint32_t commRank);
    void MatchP2p(uint32_t src, uint32_t dst);
    /// Point-to-point (plan p2p or direct) between two GPUs of one server: the steps of the
    /// largest part of NCCL's split of a `payloadBytes` operation when it runs the Simple
    /// protocol, whose receiving warps copy each step out of the FIFO after the sending warps
    /// put it in; 0 when NCCL streams it (LL) or the peer is reached through a NIC.
    uint32_t P2pCopyOutSteps(const CollectivePlan& plan, uint32_t src, uint32_t dst,
                             double payloadBytes);
    /// The step-graph executor of a new instance (nccl-algorithms.h).
    /// `sent` (optional) counts the transfers with a payload by (src, dst, flow key).
    std::unique_ptr<CollectiveExecutor> MakeExecutor(const gpusim::Op& op,
                                                     const CollectivePlan& plan,
                                                     SentCounts* sent = nullptr);
    /// Backend endpoint of an executor node: a member GPU or an NVSwitch.
    uint32_t Endpoint(uint32_t node) const;

    /// The tuner's plan for (kind, bytes) on this communicator, computed once (the tuner
    /// depends on nothing else that changes while the job runs).
    const CollectivePlan& PlanFor(gpusim::CollKind kind, uint64_t bytes);

    NcclWorld* m_world = nullptr;
    std::map<std::pair<int, uint64_t>, CollectivePlan> m_plans; //!< PlanFor's cache
    std::string m_id;
    uint32_t m_nranks = 0;
    std::vector<uint32_t> m_gpus; //!< by comm rank; UINT32_MAX = not joined
    std::vector<uint32_t> m_switches; //!< NVSwitch endpoint of each server group (NVLS)
    std::map<uint64_t, Instance> m_instances;
    /// Finished instances kept for reuse: their map node and per-rank buffers (a training run
    /// posts millions of collectives on a few hundred communicators; allocating each instance
    /// anew was most of the engine's malloc time).
    std::vector<std::map<uint64_t, Instance>::node_type> m_spareInstances;
    /// Takes a finished instance out of m_instances into m_spareInstances.
    void RecycleInstance(uint64_t seq);
    std::map<MemoKey, MemoEntry> m_memo; //!< collective fidelity
    std::map<std::pair<uint32_t, uint32_t>, std::deque<P2pPost>> m_sends; //!< (src,dst)
    std::map<std::pair<uint32_t, uint32_t>, std::deque<P2pPost>> m_recvs; //!< (src,dst)
    uint64_t m_p2pTransfers = 0;
    /// What NCCL's point-to-point split depends on (P2pCopyOutSteps), fixed once the members
    /// are (p2pComm.nRanks == 0: not computed yet).
    mutable gpusim::NcclP2pComm m_p2pComm{0, 0, 0, 0};
};

class NcclWorld : public Object
{
  public:
    static TypeId GetTypeId();
    NcclWorld();
    ~NcclWorld() override;

    void SetBackend(Ptr<NetworkBackend> backend);
    Ptr<NetworkBackend> GetBackend() const;
    /// This world's owner number on its backend (its job's index on a shared fabric).
    uint32_t GetOwner() const;
    Ptr<ClusterTopology> GetTopology() const;

    /// Registers that GPU `gpu` is rank `commRank` of communicator `comm` (of `nranks`).
    Ptr<Communicator> Join(const std::string& comm, uint32_t nranks, uint32_t commRank,
                           uint32_t gpu);
    Ptr<Communicator> Find(const std::string& comm) const;
    const std::map<std::string, Ptr<Communicator>>& GetCommunicators() const;

    /// Chooses algorithm, protocol and channels for a collective on a communicator: NCCL's
    /// tuner (nccl-tuner.cc).
    CollectivePlan Plan(gpusim::CollKind kind, uint64_t bytes, const Communicator& comm) const;
    /// The calibration of the cluster (the topology's).
    const gpusim::NcclCalibration& Calibration() const;

    /// What the route between two backend endpoints is made of (cached).
    struct HopInfo
    {
        double wireUs = 0;  //!< sum of the route's link latencies
        bool inter = false; //!< crosses NICs / the fabric
        bool nvls = false;  //!< one end is an NVSwitch
    };
    const HopInfo& Hop(uint32_t srcEndpoint, uint32_t dstEndpoint) const;

    /// Fidelity=collective (doc/flow-backend.md): true when collectives may be replayed.
    bool IsCollectiveFidelity() const;
    /// The backend as a FlowBackend (null for other backends: collective fidelity then runs
    /// every collective in detail).
    FlowBackend* GetFlowBackend() const;
    /// Collective fidelity: no flow drains over any of `links` and none is reserved now.
    bool LinksFree(const std::vector<uint32_t>& links) const;
    /// Collective fidelity: `links` belong to one replayed or watched instance until `until`.
    void Reserve(const std::vector<uint32_t>& links, Time until);
    /// Collective fidelity: collective instances a GPU has launched and not finished (+1 at
    /// a rank's launch, -1 at its completion); RingFlows needs its own to be the only one.
    void CountOpen(uint32_t gpu, int delta);
    uint32_t GetOpen(uint32_t gpu) const;

    /// Collective fidelity: how far apart (fraction of the op's run time) ranks may join for
    /// the instance to be watched or replayed as if all joined with the last (0 under auto:
    /// waiting is not exact on shared links).
    double GetFidelitySkew() const;
    /// What collective-level fidelity did (all zero at Fidelity=chunk).
    struct FidelityStats
    {
        uint64_t replayed = 0;  //!< instances replayed from a watched run (no transfers)
        uint64_t watched = 0;   //!< watched detailed runs that became replayable
        uint64_t unwatched = 0; //!< watched runs that met foreign traffic (not replayable)
        uint64_t detailed = 0;  //!< instances run in detail (learning, skew, busy links)
        uint64_t conflicts = 0; //!< replays whose links carried other traffic meanwhile
        uint64_t fluid = 0;     //!< RingFlows: ring instances run as one flow per edge
        uint64_t oneRail = 0;   //!< NVLS / NVLSTree instances run as one rail for all
        /// Instances run chunk by chunk, by ChunkReason (Forced is not counted).
        std::array<uint64_t, static_cast<size_t>(ChunkReason::Count)> chunk{};
        /// All instances counted by `chunk`.
        uint64_t ChunkTotal() const;
        /// Adds another run's counts (a CLI sweep runs one world per size).
        void Add(const FidelityStats& o);
        /// As a JSON object: {"mode" (when given), "edge_flows", "one_rail", "replayed", "chunk",
        /// "chunk_reasons": {ToString(ChunkReason): count}, "conflicts"}.
        std::string Json(const std::string& mode = "") const;
    };
    /// Fidelity=auto: the shortcuts that are exact for the collective (replay, ring edge
    /// flows; never NVLS trial loops), chunk level otherwise and on other backends.
    bool IsAutoFidelity() const;
    /// Fidelity=collective with RingFlows, or auto: isolated ring collectives run as edge flows.
    bool IsRingFlows() const;
    /// Pxn attribute: NCCL relays point-to-point traffic through the GPU on the peer's rail.
    bool IsPxn() const;
    /// P2pCopyOut attribute: Simple point-to-point over NVLink pays its receiver's copy of the
    /// last step out of the FIFO.
    bool P2pCopyOut() const;
    /// Bandwidth (GB/s) of GPU `gpu`'s path to its NIC, the narrower of its PCIe and NIC links
    /// (NCCL's netBw for the network channels per peer); 0 without a NIC.
    double NetGBps(uint32_t gpu) const;
    /// Trees of a tree plan whose rings have `channels` channels (mirrored pairs).
    uint32_t TreeChannels(uint32_t channels) const;
    /// Chunks a ring connection between servers keeps in flight under protocol `proto`
    /// (LlRingNetSlots for LL, RingNetSlots for LL128 and Simple).
    uint32_t RingNetSlots(const std::string& proto) const;
    /// Chunks a Simple / LL128 tree connection between servers keeps in flight (TreeNetSlots).
    uint32_t TreeNetSlots() const;
    /// RingFlows with NvlsTrialLoops > 0: NVLS loops run chunk by chunk at most (0: off).
    uint32_t GetNvlsTrialLoops() const;
    const FidelityStats& GetFidelityStats() const;
    FidelityStats& MutableFidelityStats();

    uint64_t NextTransferId();
    /// Starts a transfer after `delay` (the protocol's step latency); delivered() runs at
    /// delivery. `streamed`: through the backend's StartStreamedTransfer. Transfers deferred to
    /// the same instant share one event.
    void StartTransfer(Time delay, uint32_t srcGpu, uint32_t dstGpu, uint64_t wireBytes,
                       uint64_t flowKey, bool streamed, std::function<void()> delivered);
    void NotifyCompleted(const CollectiveRecord& r);
    bool HasPending() const;
    std::string DescribePending() const;
    /// DescribePending of the communicators that hold both GPUs (with their pending work).
    std::string DescribePendingFor(uint32_t gpuA, uint32_t gpuB) const;

    TracedCallback<const CollectiveRecord&> m_collectiveCompleted;
    TracedCallback<const TransferRecord&> m_transferDelivered; //!< every collective transfer

  protected:
    void DoDispose() override;

  private:
    struct Estimate; //!< one (algorithm, protocol) candidate of the tuner (nccl-tuner.cc)
    struct LinkLoads;
    /// Adds the bytes an algorithm puts on every directed link (the real routes, weighted by
    /// the link classes' efficiencies) and the dependency depth, split by link class.
    void AddAlgorithmLoads(gpusim::CollKind kind, const std::string& algo, uint64_t bytes,
                           const Communicator& comm, uint32_t channels, const CollectivePlan& eff,
                           LinkLoads& loads) const;
    struct ChannelModels; //!< NCCL's release constants for one Plan (nccl-tuner.cc)
    /// `loads`: the algorithm's loads if already built for another protocol (they do not
    /// depend on it); null builds them here, and `built` (if given) receives them.
    /// `models` (null in closed-form mode): NCCL's per-channel caps, which bound the executed
    /// rate, and the release's tuner, whose differences from the executor's constants make
    /// the candidate's Estimate::selectUs.
    Estimate EstimateCandidate(gpusim::CollKind kind, const std::string& algo,
                               const std::string& proto, uint64_t bytes, const Communicator& comm,
                               uint32_t channels, const ChannelModels* models,
                               const LinkLoads* loads = nullptr,
                               LinkLoads* built = nullptr) const;
    std::vector<std::string> CandidateAlgorithms(gpusim::CollKind kind,
                                                 const Communicator& comm) const;
    /// Protocol and link costs of (algorithm, protocol) into `plan` (Efficiency overrides).
    void FillCosts(const std::string& algo, const std::string& proto, CollectivePlan& plan) const;
    /// NCCL's NVLS/NVLSTree loop size for `bytes` on `servers` servers of `ppn` GPUs.
    uint32_t NvlsLoops(uint64_t bytes, uint32_t servers, uint32_t ppn) const;
    /// What the network plugin's reported latency adds to a candidate when NCCL's tuner
    /// compares them (NcclCalibration::netSelectionUs); the executed time does not include it.
    double SelectionBiasUs(gpusim::CollKind kind, const std::string& algo,
                           const std::string& proto, const Communicator& comm) const;

    struct PendingTransfer
    {
        uint64_t id = 0;
        uint32_t src = 0;
        uint32_t dst = 0;
        uint64_t bytes = 0;
        uint64_t flowKey = 0;
        bool streamed = false;
        std::function<void()> delivered;
    };
    void Launch(uint32_t slot);
    void LaunchDeferred(int64_t at);
    void Delivered(uint32_t slot, const TransferRecord& r);

    Ptr<NetworkBackend> m_backend;
    std::map<std::string, Ptr<Communicator>> m_comms;
    std::vector<PendingTransfer> m_slots; //!< transfers in flight, reused through m_freeSlots
    std::vector<uint32_t> m_freeSlots;
    std::map<int64_t, std::vector<uint32_t>> m_deferred; //!< start time step -> slots
    uint64_t m_nextTransferId = 1;
    uint32_t m_owner = 0;       //!< NetworkBackend::AcquireOwner, taken at the first SetBackend
    bool m_ownerTaken = false;
    mutable std::unordered_map<uint64_t, HopInfo> m_hops; //!< by (src << 32 | dst) endpoint
    std::string m_algorithm;  //!< auto | ring | tree | nvls | nvlstree
    std::string m_protocol;   //!< auto | simple | ll128 | ll
    double m_efficiency;      //!< > 0: overrides protocol bandwidth factors, zero latencies
    uint32_t m_channels;      //!< 0 = one per member GPU of a server across servers, else 1
    uint64_t m_chunkBytes;
    uint32_t m_pipelineDepth;
    uint32_t m_ringNetSlots;
    uint32_t m_llRingNetSlots;
    uint32_t m_treeNetSlots;
    bool m_treesOnAllNics;
    bool m_pxn;
    bool m_p2pCopyOut;
    std::string m_fidelity;              //!< chunk | collective | auto
    double m_fidelitySkew;               //!< join skew a replay allows, fraction of its span
    bool m_ringFlows = false;            //!< collective fidelity: ring collectives as edge flows
    uint32_t m_nvlsTrialLoops = 0;       //!< RingFlows: NVLS loops run chunk by chunk (0: all)
    FlowBackend* m_flowNet = nullptr;    //!< m_backend as a FlowBackend, or null
    bool m_fabricEvents = false;         //!< the backend has fabric events: chunk level only
    std::vector<uint32_t> m_openOnGpu;   //!< per GPU: open collective instances (CountOpen)
    FidelityStats m_fidelityStats;
};

class NcclCollective : public Application
{
  public:
    static TypeId GetTypeId();
    NcclCollective();
    ~NcclCollective() override;

    void Setup(Ptr<Communicator> comm, uint32_t commRank);
    Ptr<Communicator> GetCommunicator() const;
    uint32_t GetCommRank() const;
    /// A rank that runs another rank's op list (RankTrace::opsFrom) sends to and receives from
    /// the peers at the same offsets as that rank: op.peer + shift (mod n), where shift is this
    /// rank's comm rank minus the list owner's. 0 (the default): peers as written.
    void SetPeerShift(uint32_t shift);
    /// The comm rank a Send / Recv op of this rank's list talks to.
    uint32_t PeerOf(const gpusim::Op& op) const;
    /// Called by a stream when the NCCL launch reaches its head.
    void Launch(const gpusim::Op* op, std::function<void()> done);

  protected:
    void DoDispose() override;

  private:
    void StartApplication() override;
    void StopApplication() override;

    Ptr<Communicator> m_comm;
    uint32_t m_commRank = 0;
    uint32_t m_peerShift = 0;
    uint64_t m_launched = 0;
};

/// Step-graph executor of one collective instance (internal; exposed for tests).
class CollectiveExecutor
{
  public:
    virtual ~CollectiveExecutor();
    /// Comm rank r has launched the collective (after the plan's base latency).
    virtual void Join(uint32_t r) = 0;
    std::function<void(uint32_t)> onRankDone;
    uint64_t transfers = 0;
};

} // namespace ns3

#endif // GPUSIM_NCCL_COLLECTIVE_H
