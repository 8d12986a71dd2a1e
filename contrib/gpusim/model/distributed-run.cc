#include "ns3/distributed-run.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#ifdef GPUSIM_HAVE_NS3_MPI
#include "ns3/mpi-interface.h"

#include <mpi.h>
#endif

#include <cstdlib>
#include <string>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("GpusimDistributedRun");

namespace gpusim
{

namespace
{
bool g_enabled = false;
uint32_t g_rank = 0;
uint32_t g_size = 1;
#ifdef GPUSIM_HAVE_NS3_MPI
bool g_stale = false;  //!< a simulator was destroyed since the MPI interface was set up
bool g_hooked = false; //!< the current simulator will mark it stale when destroyed

void
MarkStale()
{
    g_stale = true;
    g_hooked = false;
}

/// Processes the MPI launcher started (Open MPI, MPICH/PMI), 1 outside a launcher.
uint32_t
LauncherSize()
{
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    {
        if (const char* v = std::getenv(var))
        {
            return static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
        }
    }
    return 1;
}
#endif
} // namespace

bool
DistributedSupported()
{
#ifdef GPUSIM_HAVE_NS3_MPI
    return true;
#else
    return false;
#endif
}

bool
DistributedInit(int* argc, char*** argv)
{
#ifdef GPUSIM_HAVE_NS3_MPI
    if (g_enabled || LauncherSize() <= 1)
    {
        return g_enabled;
    }
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised)
    {
        MPI_Init(argc, argv);
    }
    int rank = 0;
    int size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size <= 1)
    {
        return false;
    }
    // MPI started here, so ns-3 leaves MPI_Finalize to us (DistributedFinalize).
    MpiInterface::Enable(MPI_COMM_WORLD);
    g_enabled = true;
    g_rank = static_cast<uint32_t>(rank);
    g_size = static_cast<uint32_t>(size);
    g_stale = false;
    Simulator::ScheduleDestroy(&MarkStale);
    g_hooked = true;
    NS_LOG_INFO("process " << g_rank << " of " << g_size);
    return true;
#else
    (void)argc;
    (void)argv;
    return false;
#endif
}

void
DistributedFinalize()
{
#ifdef GPUSIM_HAVE_NS3_MPI
    if (!g_enabled)
    {
        return;
    }
    MpiInterface::Disable();
    MPI_Finalize();
    g_enabled = false;
    g_rank = 0;
    g_size = 1;
#endif
}

bool
DistributedEnabled()
{
    return g_enabled;
}

uint32_t
DistributedRank()
{
    return g_rank;
}

uint32_t
DistributedSize()
{
    return g_size;
}

void
DistributedPrepareSimulation()
{
#ifdef GPUSIM_HAVE_NS3_MPI
    if (!g_enabled)
    {
        return;
    }
    // Simulator::Destroy (DistributedSimulatorImpl::Destroy -> MpiInterface::Destroy) frees the
    // granted-time-window interface's receive buffers but leaves it enabled: the next
    // simulation in this process would receive into freed memory. A fresh interface on a fresh
    // duplicate of the world communicator (a collective call: every process runs the same
    // scenario, so it gets here at the same point).
    if (g_stale)
    {
        MpiInterface::Disable();
        MpiInterface::Enable(MPI_COMM_WORLD);
        g_stale = false;
    }
    if (!g_hooked)
    {
        Simulator::ScheduleDestroy(&MarkStale);
        g_hooked = true;
    }
#endif
}

void
DistributedSum(std::vector<uint64_t>& v)
{
#ifdef GPUSIM_HAVE_NS3_MPI
    if (g_enabled && !v.empty())
    {
        static_assert(sizeof(unsigned long long) == sizeof(uint64_t));
        MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()),
                      MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
#else
    (void)v;
#endif
}

void
DistributedSum(std::vector<double>& v)
{
#ifdef GPUSIM_HAVE_NS3_MPI
    if (g_enabled && !v.empty())
    {
        MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM,
                      MPI_COMM_WORLD);
    }
#else
    (void)v;
#endif
}

int64_t
DistributedMax(int64_t v)
{
#ifdef GPUSIM_HAVE_NS3_MPI
    if (g_enabled)
    {
        long long x = v;
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        return x;
    }
#endif
    return v;
}

} // namespace gpusim
} // namespace ns3
