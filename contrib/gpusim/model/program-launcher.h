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

    /// Starts argv[0] (searched in PATH) with `env` added to ours. Throws std::runtime_error.
    size_t Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
    /// Reaps what has exited; true when every process is done.
    bool Reap();
    void SignalAll(int sig);
    /// SIGTERM, up to graceS seconds, then SIGKILL; waits for all.
    void StopAll(double graceS = 2.0);
    const std::vector<Process>& Processes() const;

    /// "exited with status 1", "was killed by signal 9 (Killed)".
    static std::string DescribeStatus(int status);

  private:
    std::vector<Process> m_procs;
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
