/*
 * LaunchPlan: how the processes of a job running on the shim map onto the simulated cluster,
 * the way torchrun, mpirun or a Slurm step place them on real nodes. `gpusim run` (live) and
 * `gpusim record` use the same plan, so a program sees the same ranks, environment and GPUs in
 * both.
 *
 * The job uses `ranks` GPUs, numbered server by server (rank = server x GPUs per server + GPU).
 * Each server runs `processesPerServer` processes (default: one per GPU). Every process sees
 * the GPUs of its server, as on a real node, and the GPU it selects (cudaSetDevice) decides
 * which rank its work is; with `devicesPerProcess` D the launcher instead pins each process to
 * D GPUs of its own through CUDA_VISIBLE_DEVICES (CUDA renumbers them from 0). With `launcher`
 * the program is an MPI launcher started once for the whole job, and the ranks it starts place
 * themselves.
 */
#ifndef GPUSIM_LAUNCH_PLAN_H
#define GPUSIM_LAUNCH_PLAN_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ns3
{
class ProgramLauncher;

namespace gpusim
{

struct LaunchPlan
{
    uint32_t ranks = 1;              //!< GPUs of the job
    uint32_t gpusPerServer = 8;      //!< GPUs per server of the cluster
    uint32_t processesPerServer = 0; //!< 0: one per GPU of the server
    uint32_t devicesPerProcess = 0;  //!< 0: each process sees every GPU of its server
    /// The program is a job launcher (mpirun, mpiexec) that starts the job's processes itself:
    /// it runs once, as from a login node, with no rank or server of its own, and each process
    /// it starts takes its server from its MPI rank, in blocks of ceil(ranks / servers) (the
    /// shim; libgpusim-node.so gives it that server's host name and local-rank variables).
    bool launcher = false;

    struct Process
    {
        uint32_t index;      //!< RANK: process number in the job
        uint32_t server;     //!< simulated server it runs on
        uint32_t localRank;  //!< LOCAL_RANK: number among its server's processes
        uint32_t localSize;  //!< LOCAL_WORLD_SIZE
        std::string visible; //!< CUDA_VISIBLE_DEVICES it gets ("" : not set)
    };

    /// Throws std::invalid_argument when the numbers do not describe a job.
    void Validate() const;
    uint32_t Servers() const;
    /// GPUs of the job on `server` (the last server may be partly used).
    uint32_t GpusOnServer(uint32_t server) const;
    std::vector<Process> Processes() const;
    /// The server whose GPU `rank` is.
    uint32_t ServerOfRank(uint32_t rank) const;

    /// Environment of process `p`: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
    /// MASTER_ADDR/MASTER_PORT (torchrun's), the shim's GPUSIM_RANK, GPUSIM_LOCAL_RANK,
    /// GPUSIM_WORLD_SIZE, GPUSIM_JOB, GPUSIM_SERVER, GPUSIM_SERVERS, GPUSIM_GPUS_PER_SERVER,
    /// GPUSIM_DEVICES and CUDA_VISIBLE_DEVICES when the plan pins GPUs.
    std::map<std::string, std::string> Environment(const Process& p, uint32_t processes) const;
    /// Variables a process must not inherit from gpusim's own environment (a real machine's
    /// CUDA_VISIBLE_DEVICES names real GPUs, not the simulated server's).
    std::vector<std::string> Unset(const Process& p) const;
    /// `program` with "{rank}", "{local_rank}", "{world_size}" replaced for process `p`.
    static std::vector<std::string> Arguments(const std::vector<std::string>& program,
                                              const Process& p,
                                              uint32_t processes);
    /// Starts every process of the plan under `launcher`: `program` with its placeholders
    /// replaced, `env` plus the process's own variables (Environment), without the variables
    /// of Unset. Returns their indices in the launcher, in process order.
    std::vector<size_t> Spawn(ProgramLauncher& launcher,
                              const std::vector<std::string>& program,
                              const std::map<std::string, std::string>& env) const;
};

/// Adds what puts a program on the shim in `shimLibDir` to `env`: LD_LIBRARY_PATH with the shim
/// first; LD_PRELOAD with the shim's libraries `preload` (file names) before gpusim's own
/// preloads; NVTX_INJECTION64_PATH to the shim's NVTX collector unless `env` or gpusim's own
/// environment names one; GPUSIM_UNIQUE_ID_TIMEOUT (a rank waiting for a dead rank 0's NCCL id
/// gives up no later than the run) when `timeoutS` > 0.
void AddShimEnvironment(std::map<std::string, std::string>& env,
                        const std::string& shimLibDir,
                        const std::vector<std::string>& preload,
                        double timeoutS);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_LAUNCH_PLAN_H
