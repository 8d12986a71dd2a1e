/*
 * LiveJobSource: live mode. Runs an unmodified CUDA/NCCL program as N processes on the gpusim
 * shim and feeds the ops they issue into the engine while it runs; the program's blocking
 * calls (synchronize, queries, elapsed time, NCCL init) are answered with simulated time, and
 * the shim's virtual clocks make the program's own timers read it.
 *
 * Synchronizer (conservative): a host thread whose next op has not arrived parks; before the
 * simulator runs an event at time t, the gate (HostFirstScheduler) waits until no parked
 * thread can still issue an op before or at t. A parked thread's next op issues no earlier
 * than its program thread's virtual clock, which the simulator knows: the latest issue time
 * of what that program thread sent, or of the answers it got. A program thread waiting for an
 * answer bounds nothing until the answer is given. Answers are therefore final, and with the
 * scheduler's canonical order of host steps the live run and a replay of its recording
 * (TraceOpFeed, `gpusim simulate`) process the same events in the same order.
 * Optimistic mode (attribute Optimistic) runs ahead of the bound from fork()ed snapshots and
 * rolls back when an op arrives in the speculated past; see doc/live-mode.md.
 *
 * Wire protocol (Unix stream socket, one connection per program thread that calls CUDA):
 *   client: "HELLO <process> <pid> <tid>\n" (with the descriptor of its op ring attached), then
 *           "O <rank> <op json>\n" (no answer wanted) or "W <rank> <op json>\n" (the thread
 *           waits for the answer), written to the ring (memory shared with the simulator; on
 *           the socket when the program could not make one); a lone "\n" on the socket wakes
 *           the simulator, sent only when it flagged the ring before sleeping;
 *   server: "A <seq> <time_ns> <value>\n" answers the seq-th W line of that connection (1-based);
 *           "E <seq> <message>\n" fails it (the simulation cannot answer).
 * The rank of an op is the cluster rank of the GPU the program used (server x GPUs per server +
 * GPU, LaunchPlan); a rank belongs to the first process that issues work on it.
 */
#ifndef GPUSIM_LIVE_JOB_SOURCE_H
#define GPUSIM_LIVE_JOB_SOURCE_H

#include "ns3/launch-plan.h"
#include "ns3/op-feed.h"
#include "ns3/program-launcher.h"
#include "ns3/traced-callback.h"

#include <deque>
#include <map>
#include <poll.h>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ns3
{

/// What a live run did, beyond the simulation's own metrics.
struct LiveRunStats
{
    uint64_t opsReceived = 0;
    uint64_t answers = 0;         //!< blocking calls answered
    double waitForProgramS = 0;   //!< wall time the simulator waited for the program
    uint32_t lateThreads = 0;     //!< threads first seen after their start instant had passed
    uint32_t liftedWaits = 0;     //!< times the bound stopped waiting for blocked threads
    uint32_t liftedSpinning = 0;  //!< threads lifted while on the CPU (waiting outside CUDA)
    uint64_t lateOps = 0;         //!< ops that arrived after the simulation passed their instant
    // Optimistic synchronization.
    bool optimistic = false;
    uint64_t snapshots = 0;         //!< speculations started (fork()ed snapshots)
    uint64_t commits = 0;           //!< speculations confirmed
    uint64_t rollbacks = 0;         //!< speculations undone (restored from the snapshot)
    uint64_t resimulatedEvents = 0; //!< events run speculatively and undone
    uint64_t maxSnapshotBytes = 0;  //!< resident memory of the largest snapshot (shared COW)
    std::string ToJson() const;
};

/// One line a program sends (the wire protocol above), as ParseLiveLine reads it.
struct LiveLine
{
    char kind = 0;         //!< 'H' (HELLO), 'O' or 'W'
    int pid = -1;          //!< HELLO
    int tid = -1;          //!< HELLO
    uint32_t rank = 0;     //!< O / W
    std::string_view json; //!< O / W: the op's JSON (a view into the line), not parsed here
};

/// Parses one non-empty line (without its '\n') of the protocol: its syntax, and the rank
/// against the job's `ranks` GPUs. `where` and `lineNo` name the connection and line in
/// errors. Throws std::runtime_error on a malformed line. LiveJobSource::HandleLine's parser,
/// a free function so that test/fuzz/live-line-fuzz.cc can reach it.
LiveLine ParseLiveLine(std::string_view line, size_t ranks, const std::string& where,
                       uint64_t lineNo);

class LiveJobSource : public OpFeed
{
  public:
    static TypeId GetTypeId();
    LiveJobSource();
    ~LiveJobSource() override;

    /// Starts the processes of `plan` running `program` (argv; "{rank}", "{local_rank}",
    /// "{world_size}" replaced per process) on the shim in `shimLibDir`; `extraEnv` is added to
    /// each. The job's ranks are plan.ranks GPUs. Throws std::runtime_error when the socket or
    /// a process cannot be created, std::invalid_argument for a plan that is not a job.
    void Launch(const std::vector<std::string>& program,
                const gpusim::LaunchPlan& plan,
                const std::string& shimLibDir,
                const std::map<std::string, std::string>& extraEnv = {});

    /// Runs the simulation until the programs are done (Simulator::Run, again whenever a
    /// program thread appears while nothing else can run). Returns true if every process
    /// exited; false if the run had to be ended (stuck, interrupted, timed out). Programs
    /// still waiting when the simulation cannot answer get an error and are stopped.
    bool Run();

    /// The ops received so far, as a trace (rank files + manifest metadata "mode": "live").
    gpusim::JobTrace GetRecording() const;
    const LiveRunStats& GetStats() const;
    /// Optimistic runs (attribute Optimistic): after Launch(), splits off the coordinator that
    /// stays the programs' parent (ProgramLauncher::SplitCoordinator). Returns -1 in the
    /// worker, which goes on with the simulation; in the coordinator, the exit code to return.
    int SplitCoordinator();
    /// Worker of an optimistic run: the exit code the coordinator returns.
    void ReportResult(int code);
    /// Exit status of each process (waitpid form), after Run().
    const std::vector<ProgramLauncher::Process>& GetProcesses() const;
    /// "" or why Run() ended the programs (timeout, interrupt, stuck).
    const std::string& GetEndReason() const;

    uint32_t GetNRanks() const override;
    std::vector<uint32_t> KnownThreads(uint32_t rank) const override;
    State Next(uint32_t rank, uint32_t thread, gpusim::Op*& op) override;
    void WhenReady(uint32_t rank,
                   uint32_t thread,
                   Time since,
                   bool holdAt,
                   std::function<void()> ready) override;
    void Returned(uint32_t rank, uint32_t thread, const gpusim::Op& op, int64_t value) override;

    /// TraceSource signatures.
    typedef void (*OpReceivedCallback)(uint32_t rank, uint32_t thread, const gpusim::Op& op);
    typedef void (*AnsweredCallback)(uint32_t rank, uint32_t thread, Time at, int64_t value);
    typedef void (*RollbackCallback)(uint64_t resimulatedEvents);
    typedef void (*SpeculationStepCallback)(const std::string& step, Time at);
    typedef void (*WarningCallback)(const std::string& message);

  protected:
    void DoDispose() override;

  private:
    TracedCallback<uint32_t, uint32_t, const gpusim::Op&> m_opReceived; //!< op from a program
    TracedCallback<uint32_t, uint32_t, Time, int64_t> m_answered;       //!< blocking call returns
    TracedCallback<uint64_t> m_rolledBack; //!< optimistic: a speculation was undone
    TracedCallback<const std::string&, Time> m_speculationStep; //!< optimistic: its life cycle
    TracedCallback<const std::string&> m_warning; //!< the run goes on, but differs from what was asked

    /// A program process that talks to the simulator, or one the simulator started.
    struct ProgramProcess
    {
        int32_t pid = -1;
        int32_t launched = -1;    //!< index in m_launcher, -1 for a process one of them started
        bool launcher = false;    //!< it started processes that talk to us (mpirun, a script)
        uint32_t connections = 0; //!< open connections (its threads that called CUDA)
    };
    struct Connection
    {
        int fd = -1;
        int32_t process = -1;                  //!< index in m_processes (from HELLO)
        std::string where = "live connection"; //!< names it in error messages
        char* ring = nullptr; //!< the thread's op ring (shared memory), if it has one
        size_t ringBytes = 0;
        uint64_t ringCapacity = 0; //!< read once at attach: the program can write the header
        int ringFd = -1;           //!< kept to hand a restored snapshot the ring
        std::string in;            //!< bytes not yet parsed
        uint64_t lines = 0;        //!< lines read (for error positions)
        uint64_t waitSeq = 0;      //!< W lines received
        uint64_t outstanding = 0;  //!< W lines not answered yet
        uint64_t clockNs = 0;      //!< lower bound of its virtual clock (latest issue/answer)
        uint64_t opsAtClock = 0;   //!< ops in a row that left clockNs where it was
        int32_t pid = -1;          //!< program process and thread (from HELLO)
        int32_t tid = -1;
        bool lifted = false;       //!< blocked outside CUDA while nothing else could move
        double lastLineWallS = 0;  //!< when it last sent anything (wall s)
        bool polling = false;      //!< its last answer was a poll's "not ready"
        uint64_t heldAnswers = 0;  //!< answers computed speculatively, not sent yet
        uint64_t heldMinNs = 0;    //!< earliest of them (the thread resumes no earlier)

        std::set<std::pair<uint32_t, uint32_t>> feeds; //!< (rank, thread) it carried
    };
    struct ThreadFeed
    {
        std::deque<gpusim::Op*> queue;
        int32_t conn = -1;  //!< connection carrying it
        bool ended = false;
        uint64_t lastIssueNs = 0; //!< issue time of its latest op received (or answer)
        // A restored snapshot can receive ops sent after an answer only a discarded
        // speculation gave: their instants count from that answer, which is not given here yet.
        uint64_t unanswered = 0;  //!< W ops received and not answered in this process
        uint64_t deferredNs = 0;  //!< host time of the ops received since then
        // Parked: waiting for its next op.
        bool parked = false;
        bool hold = false;        //!< an open group must launch at `since`
        uint64_t sinceNs = 0;
        std::function<void()> ready;
    };
    struct PendingAnswer
    {
        int32_t conn;
        uint64_t seq;
    };

    /// Reads whatever the programs sent, accepts connections, reaps processes; waits up to
    /// timeoutMs for something to happen. Throws on interrupt or timeout.
    void Pump(int timeoutMs, bool checkDeadline = true);
    void ReadConnection(int32_t id);
    /// Maps a program thread's op ring (its descriptor came with the HELLO line).
    void AttachRing(int32_t id, int ringFd);
    /// Reads what the thread wrote to its ring since the last time; true if anything.
    bool DrainRing(int32_t id);
    bool DrainRings();
    /// Sets or clears every ring's "wake me" flag; when setting, true if a ring has data.
    bool SleepRings(bool sleeping);
    void AppendInput(int32_t id, const char* data, size_t n);
    void HandleInput(int32_t id);
    void HandleLine(int32_t id, std::string_view line);
    void CloseConnection(int32_t id);
    void Send(int32_t id, const std::string& msg);
    bool ThreadEnded(uint32_t rank, uint32_t thread) const;
    /// The scheduler's gate (see HostFirstScheduler::Gate).
    bool Gate(bool haveEvent, uint64_t ts);
    /// Earliest instant a parked thread may still issue an op at (UINT64_MAX: none).
    uint64_t Bound() const;
    /// Unparks threads whose op (or end) has arrived.
    void WakeParked();
    /// Bound() over everything but connection `except` (-1: everything).
    uint64_t BoundExcept(int32_t except) const;
    /// Appends bytes read from a connection and handles the complete lines.
    void Ingest(int32_t id, const char* data, size_t n);
    /// Sends an answer (and applies what it changes) or, while speculating from a state no
    /// later op could change yet, holds it.
    void Answer(int32_t conn,
                uint32_t rank,
                uint32_t thread,
                uint64_t seq,
                int64_t value,
                uint64_t atNs);
    void ReleaseHeld();

    // Optimistic synchronization: when the gate has waited for the programs for a while, the
    // simulator fork()s; the parent stays behind as the snapshot and the child runs on past
    // the bound, logging what it reads. An op whose instant the child has already passed rolls
    // back: the child hands its log (and new sockets) to the snapshot and exits; the snapshot
    // ingests it and goes on. Once the bound passes everything the child ran, the snapshot is
    // released.
    void Speculate();
    void WaitAsSnapshot(int channel);
    [[noreturn]] void RollBack();
    void Commit();
    /// Fires SpeculationStep and appends "STEP PID NS" to SpeculationLog (if set).
    void NoteSpeculation(const char* step, uint64_t atNs);
    struct Speculation
    {
        bool active = false;
        int channel = -1;           //!< SOCK_SEQPACKET to the snapshot
        uint64_t maxTs = 0;         //!< latest event instant run since the snapshot
        uint64_t events = 0;        //!< events run since the snapshot
        double lastPumpS = 0;
        bool ranDry = false;        //!< it has run every event it could without the programs
        std::map<int32_t, std::string> log; //!< bytes read per connection since the snapshot
        std::set<int32_t> eof;      //!< connections that ended since
        std::set<int32_t> accepted; //!< connections accepted since
        std::set<int32_t> rings;    //!< connections whose op ring was attached since
    };
    struct HeldAnswer
    {
        int32_t conn;
        uint32_t rank;
        uint32_t thread;
        uint64_t seq;
        uint64_t atNs;
        int64_t value;
    };
    bool m_optimistic = false;
    double m_speculateAfterS = 0.002;
    std::string m_speculationLog; //!< attribute SpeculationLog
    Speculation m_spec;
    std::vector<HeldAnswer> m_held;
    /// Nothing can move: every connected program thread waits for an answer and every running
    /// process has one (held for a moment, since a new program thread may still appear).
    bool Deadlocked();
    /// The program threads that hold the bound are all off the CPU (joining, waiting on a lock
    /// or on I/O): stop waiting for them (they catch up with their process's clock when they
    /// wake, see the shim's vclock.cc). True if any was lifted.
    bool LiftBlockedThreads();
    void FailWaitingCalls(const std::string& why);
    /// Livelock: programs poll for work that can never complete (see CheckLivelock).
    void NoteProgress();
    void CheckLivelock();
    /// Ops one connection may send in a row without its clock advancing: every one is kept
    /// until the engine issues it, so a program whose calls cost nothing (an --api-costs file
    /// of zeros) would otherwise queue ops until the memory runs out.
    static constexpr uint64_t kOpsWithoutTime = 1u << 20;
    static constexpr uint64_t kLivelockPolls = 10000; //!< "not ready" answers in a row, and
    static constexpr double kLivelockWallS = 2.0;     //!< this long with no device work queued
    static constexpr double kSilentLiftS = 0.5;       //!< on the CPU without a call while all wait
    static constexpr double kLauncherStartS = 10.0;   //!< mpirun's ranks may take this long to start
    uint64_t m_pollsSinceProgress = 0;
    double m_progressWallS = -1;
    uint64_t m_gateCalls = 0;
    std::map<std::pair<uint32_t, uint32_t>, std::string> m_lastPoll; //!< (rank, thread) -> what
    void CheckDeadline() const;
    std::string Describe(uint32_t rank, uint32_t thread) const;
    std::string DescribeProcess(int32_t process) const;
    /// The program process with this pid (registered on first sight: a process that one of
    /// ours started, e.g. an MPI rank, marks its launched ancestor as a launcher).
    int32_t ProcessOf(int32_t pid);
    /// A running launched process with no thread talking to us that has not started processes
    /// that do (a launcher): it may still claim any GPU, from any time.
    bool SomeProcessUnseen() const;
    /// A process we started that started others (mpirun) still runs.
    bool LauncherRunning() const;
    /// Nothing can move while GPUs of the job were never used: give them up (a program that
    /// uses fewer GPUs than the job has). True if any was released.
    bool ReleaseUnclaimedRanks();

    gpusim::LaunchPlan m_plan;
    std::vector<ProgramProcess> m_processes;
    std::vector<int32_t> m_rankOwner; //!< process that issued work on each rank (-1: none yet)
    std::vector<bool> m_rankReleased; //!< never used, given up
    double m_timeoutS = 0;
    std::string m_socketDir;
    std::string m_socketPath;
    int m_listenFd = -1;
    ProgramLauncher m_launcher;
    std::vector<std::string> m_program;
    std::unordered_map<int32_t, Connection> m_conns;
    int32_t m_nextConn = 0;
    std::vector<std::deque<gpusim::Op>> m_store;             //!< by rank, arrival order
    std::vector<std::map<uint32_t, ThreadFeed>> m_feeds;     //!< by rank, then thread
    std::unordered_map<const gpusim::Op*, PendingAnswer> m_waits;
    LiveRunStats m_stats;
    std::string m_endReason;
    double m_startWall = 0;
    std::set<std::pair<uint32_t, uint32_t>> m_parked;
    bool m_spin = false;            //!< poll briefly before sleeping (a core to spare)
    bool m_dirty = true;          //!< parked threads or program clocks changed since m_bound
    uint64_t m_bound = 0;
    double m_lastReapS = 0;
    std::vector<struct pollfd> m_pollFds;
    std::vector<int32_t> m_pollIds;
    std::vector<int32_t> m_drainIds;
    double m_stuckSince = -1;
    double m_heldSince = -1;        //!< the gate has been holding an event since (wall s)
    std::string m_waitingFor;       //!< what Pump() is waiting for (timeout messages)
};

} // namespace ns3

#endif // GPUSIM_LIVE_JOB_SOURCE_H
