/*
 * The NCCL model's algorithms as step-graph executors (NCCL's src/device/ kernels): one
 * executor per collective instance; a step is a transfer through the send function, started
 * when its inputs are present on the sending rank.
 *  - PipelineExecutor: rings (AllReduce, AllGather, ReduceScatter) and chains (Broadcast, Reduce)
 *  - TreeExecutor: double binary tree AllReduce
 *  - DirectExecutor: AllToAll
 *  - NvlsExecutor: NVLink SHARP AllReduce inside a server (NVLS) and, with trees over the
 *    servers, NVLS inside each server plus trees between them (NVLSTree)
 * Internal to the NCCL model (nccl-collective.cc creates them); exposed for tests.
 */
#ifndef GPUSIM_NCCL_ALGORITHMS_H
#define GPUSIM_NCCL_ALGORITHMS_H

#include "ns3/nccl-collective.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

namespace ns3
{

/// Moves `bytes` of payload from node `from` to node `to` (comm ranks, or the switch nodes an
/// executor names above them), starting as `start` says.
using SendFn = std::function<void(uint32_t from, uint32_t to, double bytes, uint64_t flowKey,
                                  StepStart start, std::function<void()> delivered)>;

/// A ring connection (position p to p + 1 of one channel) that keeps several chunks in flight.
struct RingConn
{
    uint32_t slots = 1; //!< chunks admitted and not yet delivered (1: one step at a time)
    Time step;          //!< step latency of a first-loop item (the Fresh step delay)
    Time wire;          //!< the route's wire latency (paid after the bytes unless streamed)
};

/// Ring (AllReduce, AllGather, ReduceScatter) and chain (Broadcast, Reduce) pipelines. Each
/// channel has its own order of comm ranks; a position sends items to the next position.
/// Ring: item i may be sent once items < i arrived from the previous position.
/// Chain: position 0 is the source; others forward item i after receiving it.
/// Ring items beyond the first `itemsPerLoop` stream behind the first loop (NCCL pipelines its
/// loops slice by slice), so a ring pays each step's latency once, not once per loop.
/// `conns` (ring, depth 1; per channel and position, may be empty): a connection with
/// slots > 1 (between servers: NCCL's proxy keeps kNcclSteps chunks in flight) admits item i
/// once it is ready and item i - slots was delivered, waits its step latency from admission,
/// and then sends its bytes behind the item before it on the wire: item i is delivered at
///     D(i) = max(A(i) + step + bytes + wire, D(i-1) + bytes)
/// (A: admission; the second term streams it behind item i-1, StepStart::Streamed). With one
/// slot this is the old D(i) = A(i) + step + bytes + wire, A(i) >= D(i-1).
class PipelineExecutor : public CollectiveExecutor
{
  public:
    PipelineExecutor(std::vector<std::vector<uint32_t>> orders, bool chain, uint32_t items,
                     double itemBytes, uint32_t depth, uint32_t itemsPerLoop, SendFn send,
                     std::vector<std::vector<RingConn>> conns = {});
    void Join(uint32_t r) override;

  private:
    struct Pos
    {
        uint32_t launched = 0; //!< items admitted (slots > 1) or sent
        uint32_t started = 0;  //!< slots > 1: items whose bytes were started
        uint32_t sent = 0;     //!< delivered sends
        uint32_t recvd = 0;    //!< delivered receives
        bool done = false;
        bool waking = false;              //!< slots > 1: a wake-up is scheduled
        Time lastDelivered = Time(-1);    //!< slots > 1: delivery of the latest item
        std::vector<Time> latencyEnd;     //!< slots > 1: by item % slots, admission + step
    };

    uint32_t N() const;
    uint32_t SendTotal(uint32_t p) const;
    uint32_t RecvTotal(uint32_t p) const;
    uint32_t NeedRecv(uint32_t p, uint32_t i) const;
    void Advance(uint32_t c, uint32_t p);
    /// slots > 1: starts the next admitted item's bytes when its latency and the wire allow.
    void Pump(uint32_t c, uint32_t p);
    void Wake(uint32_t c, uint32_t p);
    /// An item of (c, p) arrived at the next position, one step at a time or with slots.
    void Delivered(uint32_t c, uint32_t p);
    void CheckDone(uint32_t c, uint32_t p);

    std::vector<std::vector<uint32_t>> m_orders;
    bool m_chain;
    uint32_t m_items;
    double m_itemBytes;
    uint32_t m_depth;
    uint32_t m_itemsPerLoop;
    SendFn m_send;
    std::vector<bool> m_joined;
    std::vector<uint32_t> m_channelsDone;
    std::vector<std::vector<Pos>> m_state;
    std::vector<std::vector<uint32_t>> m_posOf;
    std::vector<std::vector<RingConn>> m_conns;
};

/// The connection from node `from` to node `to` of a tree (slots, step and wire latency).
using ConnFn = std::function<RingConn(uint32_t from, uint32_t to)>;

/// Double binary tree AllReduce: each tree reduces its half of the data towards the root in
/// pipelined chunks, then broadcasts it back down. `streamed` (LL): a connection's data flows
/// line by line as its flags arrive, so only its first chunk waits the step and path latency.
/// `conn` (not streamed, depth 1; may be empty): a connection with slots > 1 admits chunks as
/// PipelineExecutor's RingConns do (step latency from admission, bytes behind the chunk
/// before on the wire); others send one chunk at a time, each waiting its step latency.
class TreeExecutor : public CollectiveExecutor
{
  public:
    TreeExecutor(std::vector<CollectiveTree> trees, uint32_t chunks, double chunkBytes,
                 uint32_t depth, bool streamed, SendFn send, ConnFn conn = nullptr);
    void Join(uint32_t r) override;

  private:
    /// A connection with chunks in flight (slots > 1).
    struct Slots
    {
        RingConn conn;
        uint32_t started = 0;          //!< chunks whose bytes were started
        bool waking = false;           //!< a wake-up is scheduled
        Time lastDelivered = Time(-1); //!< delivery of the latest chunk
        std::vector<Time> latencyEnd;  //!< by chunk % slots, admission + step
    };
    struct Node
    {
        std::vector<uint32_t> upFromChild; //!< chunks received from each child
        uint32_t upLaunched = 0;
        uint32_t upSent = 0;
        uint32_t downRecvd = 0; //!< chunks received from the parent
        std::vector<uint32_t> downLaunched;
        std::vector<uint32_t> downSent;
        bool done = false;
        Slots up;                //!< to the parent, where slots > 1
        std::vector<Slots> down; //!< to each child, where slots > 1
    };

    uint32_t Reduced(uint32_t t, uint32_t r) const;
    uint32_t Final(uint32_t t, uint32_t r) const;
    void Advance(uint32_t t, uint32_t r);
    /// Slots of tree t's connection from r: up (kid < 0) or down to child `kid`.
    Slots& ConnSlots(uint32_t t, uint32_t r, int32_t kid);
    void Pump(uint32_t t, uint32_t r, int32_t kid);
    void Wake(uint32_t t, uint32_t r, int32_t kid);
    void UpDelivered(uint32_t t, uint32_t r);
    void DownDelivered(uint32_t t, uint32_t r, size_t i);
    size_t ChildIndex(uint32_t t, uint32_t parent, uint32_t child) const;
    void CheckDone(uint32_t t, uint32_t r);

    std::vector<CollectiveTree> m_trees;
    uint32_t m_chunks;
    double m_chunkBytes;
    uint32_t m_depth;
    bool m_streamed;
    SendFn m_send;
    std::vector<bool> m_joined;
    std::vector<uint32_t> m_treesDone;
    std::vector<std::vector<Node>> m_state;
};

/// AllToAll as direct sends: rank i sends its block to rank j once both have launched.
class DirectExecutor : public CollectiveExecutor
{
  public:
    DirectExecutor(uint32_t n, double blockBytes, SendFn send);
    void Join(uint32_t r) override;

  private:
    void Start(uint32_t from, uint32_t to);
    void Finish(uint32_t r);

    uint32_t m_n;
    double m_blockBytes;
    SendFn m_send;
    std::vector<bool> m_joined;
    std::vector<uint32_t> m_pending;
};

/// The step latency a transfer from node `from` to node `to` waits before its bytes flow (the
/// Fresh step delay of the link class, after any wire latency it includes).
using LatencyFn = std::function<Time(uint32_t from, uint32_t to)>;

/// Chunks NCCL keeps in flight per network connection: a Simple sender waits for a free slot
/// of its connection's FIFO of NCCL_STEPS = 8 (src/include/device.h:24; prims_simple.h:115
/// waits `connStepCache + NCCL_STEPS < step + StepPerSlice`), and the proxy thread sends the
/// posted steps, so a chunk's network step latency (proxy, RDMA, completion polling) runs
/// while earlier chunks are still on the wire (NCCL 2.26).
constexpr uint32_t kNcclSteps = 8;

/**
 * NVLink SHARP AllReduce, in loops (NCCL's NVLS / NVLSTree patterns). Every server has `ppn`
 * member GPUs on one NVSwitch (switch node `n + server`); GPU h of a server is the head of
 * shard h (1/ppn of each loop). Per loop and server:
 *  1. reduce: every GPU sends its loop data to the switch (in-switch reduction);
 *  2. once all have, the switch sends reduced shard h to head h;
 *  3. (NVLSTree) the heads h of all servers reduce and broadcast their shard over two mirrored
 *     trees of servers (half of the shard each), GPU h to GPU h, i.e. over rail h;
 *  4. multicast: head h sends its final shard to the switch; once all heads have, the switch
 *     sends the whole loop result to every GPU.
 * Every (stage, source, destination) pair is a connection: a loop's transfer is admitted once
 * it is ready and the connection has a free slot, waits its step latency from admission, and
 * then sends its bytes in FIFO order, `depth` at a time; a slot frees at delivery. A tree
 * connection (between servers, NCCL's proxy) has `slots` (kNcclSteps; one loop is one chunk
 * per channel, so 8 loops are NCCL's 8 slots per channel): a busy one pays its step latency
 * once, in the fill, and one that waits for its input pays it again. An NVLink stage is moved
 * by the GPU's own warps step after step (prims_simple.h: waitPeer, copy/reduce, postPeer),
 * so it has one slot: latency, then bytes, loop after loop. A tree connection whose next loop
 * is ready when a loop is delivered streams it behind that loop (StepStart::Streamed: its
 * bytes follow at once and it does not wait the route latency again), as NCCL's posted steps
 * follow each other on the wire. Loop l+1's reduce overlaps loop l's later stages as NCCL's
 * warps do.
 */
class NvlsExecutor : public CollectiveExecutor
{
  public:
    /// `shards`: the heads a loop is cut into (0: the members per server). A run with one
    /// member per server and `shards` = the real GPUs per server is one rail of the full run.
    NvlsExecutor(std::vector<std::vector<uint32_t>> servers, std::vector<CollectiveTree> trees,
                 uint32_t loops, double loopBytes, uint32_t depth, uint32_t slots,
                 LatencyFn latency, SendFn send, uint32_t shards = 0);
    void Join(uint32_t r) override;

  private:
    enum Stage : uint8_t
    {
        kUp = 0,      //!< GPU -> switch, loop data
        kReduced = 1, //!< switch -> head, reduced shard
        kTreeUp = 2,  //!< head -> parent server's head
        kTreeDown = 3,
        kMcUp = 4,   //!< head -> switch, final shard
        kMcDown = 5, //!< switch -> GPU, loop result
    };
    struct Conn;
    struct Send
    {
        Stage stage;
        uint32_t loop;
        uint32_t server; //!< server of the receiving side's shard state
        uint32_t head;
        uint32_t tree;
        uint32_t from;
        uint32_t to;
        double bytes;
        Conn* conn;
        Time latencyEnd; //!< admission + step latency
    };
    struct Conn
    {
        uint32_t inFlight = 0;  //!< transfers whose bytes are on the way
        uint32_t open = 0;      //!< admitted and not yet delivered (slots in use)
        uint32_t admitted = 0;  //!< leading entries of `queue` that hold a slot
        bool waking = false;    //!< a wake-up at the head's latency end is scheduled
        Time latency = Time(-1); //!< its step latency (one link class and route), once known
        Time lastDelivered = Time(-1); //!< when its latest transfer was delivered
        std::deque<uint32_t> queue; //!< send ids not yet started, in order
    };
    struct Head
    {
        bool reduced = false;         //!< shard reduced inside the server
        uint32_t childUp[2] = {0, 0}; //!< partial reductions received from child servers
        bool upDone[2] = {false, false};
        bool final[2] = {false, false}; //!< holds the reduction over all servers
        bool downSent[2] = {false, false};
        bool mcSent = false;
    };

    uint32_t NServers() const;
    uint32_t Switch(uint32_t s) const;
    Head& HeadState(uint32_t loop, uint32_t s, uint32_t h);
    void Queue(Stage st, uint32_t loop, uint32_t s, uint32_t h, uint32_t t, uint32_t from,
               uint32_t to, double bytes);
    void Pump(Conn* c);
    void Wake(Conn* c);
    void Delivered(uint32_t id);
    void Progress(uint32_t loop, uint32_t s, uint32_t h);
    void TryUp(uint32_t r);

    std::vector<std::vector<uint32_t>> m_servers;
    std::vector<CollectiveTree> m_trees; //!< over server indices; empty on one server
    uint32_t m_n = 0;
    uint32_t m_ppn = 0;
    uint32_t m_shards = 0; //!< heads each loop is cut into
    uint32_t m_loops;
    double m_loopBytes;
    uint32_t m_depth;
    uint32_t m_slots;
    LatencyFn m_latency;
    SendFn m_send;
    std::vector<uint32_t> m_serverOf; //!< by comm rank
    std::vector<uint32_t> m_headOf;   //!< local index by comm rank
    std::vector<bool> m_joined;
    std::vector<uint32_t> m_upQueued;      //!< loops whose reduce send is queued, by rank
    std::vector<uint32_t> m_upArrived;     //!< by loop x server
    std::vector<uint32_t> m_mcArrived;     //!< by loop x server
    std::vector<uint32_t> m_loopsReceived; //!< multicast results received, by rank
    std::vector<Head> m_heads;             //!< by (loop x server) x head
    std::vector<Send> m_sends;
    std::unordered_map<uint64_t, Conn> m_conns;
};

/// Trees pipeline in small chunks (NCCL uses a few hundred KiB) so the fill through the tree
/// depth stays a small fraction; at most 128 chunks to bound the event count.
uint32_t TreeChunks(double perTreeBytes, uint64_t chunkBytes);

/// Chunks of a tree that streams (LL): the receiver forwards each line as its flag arrives,
/// so data crosses the tree's depth at the grain of one pass of a channel's threads over their
/// lines (NCCL's LL: 512 threads x 8 payload bytes = 4 KiB), not of whole chunks. At most 128
/// chunks to bound the event count.
uint32_t StreamedTreeChunks(double perTreeBytes);

/// NCCL's double binary tree over `n` nodes (ncclGetDtree): the in-order binary tree and its
/// mirror image (even n) or its shift by one (odd n), so a node is interior in at most one.
std::vector<CollectiveTree> DoubleBinaryTree(uint32_t n);

} // namespace ns3

#endif // GPUSIM_NCCL_ALGORITHMS_H
