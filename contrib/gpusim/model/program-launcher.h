/*
 * ProgramLauncher: runs the processes of a job (each in its own process group, stdin from
 * /dev/null), reaps them and stops them (SIGTERM, grace period, SIGKILL). Used by live mode.
 * InterruptGuard: while alive, SIGINT/SIGTERM set a flag instead of killing us, so the job's
 * processes (in their own groups, out of reach of the terminal's Ctrl-C) are stopped too.
 */
#ifndef GPUSIM_PROGRAM_LAUNCHER_H
#define GPUSIM_PROGRAM_LAUNCHER_H

#include <csignal>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace ns3
{

class ProgramLauncher
{
  public:
    struct Process
    {
        pid_t pid = -1;
        int status = 0; //!< waitpid status once done
        bool done = false;
    };

    ProgramLauncher() = default;
    ProgramLauncher(const ProgramLauncher&) = delete;
    ProgramLauncher& operator=(const ProgramLauncher&) = delete;
    /// Stops whatever still runs.
    ~ProgramLauncher();

    /// Starts argv[0] (searched in PATH) with `env` added to ours and the variables in `unset`
    /// removed. Throws std::runtime_error.
    size_t Spawn(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env,
                 const std::vector<std::string>& unset = {});
    /// Reaps what has exited; true when every process is done.
    bool Reap();
    void SignalAll(int sig);
    /// SIGTERM, up to graceS seconds, then SIGKILL; waits for all.
    void StopAll(double graceS = 2.0);
    const std::vector<Process>& Processes() const;

    /// "exited with status 1", "was killed by signal 9 (Killed)".
    static std::string DescribeStatus(int status);

    /// Splits the process into a coordinator and a worker (optimistic live runs, whose worker
    /// forks snapshots of itself). The coordinator stays the processes' parent and a subreaper:
    /// it reaps them, forwards their statuses to whichever worker process is active, stops them
    /// on request, forwards SIGINT/SIGTERM to the workers, and returns the exit code the last
    /// worker reported (ReportResult), or 2 if none did. In the worker, returns -1 and this
    /// launcher becomes a proxy: Reap() reads the forwarded statuses, StopAll() and
    /// SignalAll() ask the coordinator.
    int SplitCoordinator();
    /// Worker side: the run's exit code, for the coordinator to exit with.
    void ReportResult(int code);
    /// Worker side: statuses read since the last call (a speculative worker hands them back on
    /// rollback) / applies such a log.
    std::string TakeStatusLog();
    void ApplyStatusLog(const std::string& log);

  private:
    int Coordinate();
    void ApplyStatusLine(const std::string& line);

    std::vector<Process> m_procs;
    bool m_proxy = false;   //!< worker side of SplitCoordinator
    int m_statusFd = -1;    //!< coordinator -> workers: "X index status"
    int m_controlFd = -1;   //!< workers -> coordinator: "STOP", "SIG n", "RESULT code"
    std::string m_statusIn; //!< partial status line
    std::string m_statusLog;
};

class InterruptGuard
{
  public:
    InterruptGuard();
    ~InterruptGuard();
    /// The signal received since construction, or 0.
    static int Received();

  private:
    struct sigaction m_oldInt;
    struct sigaction m_oldTerm;
};

namespace gpusim
{
/// Where the shim libraries are: $GPUSIM_SHIM_LIBDIR, else relative to the running binary
/// (build tree: BIN/../shim/lib; install prefix: BIN/../lib/gpusim-shim). Empty if not found;
/// `tried` lists the directories looked at.
std::string FindShimLibDir(std::string* tried = nullptr);
} // namespace gpusim

} // namespace ns3

#endif // GPUSIM_PROGRAM_LAUNCHER_H
