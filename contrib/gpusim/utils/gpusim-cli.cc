// gpusim command-line front door; the commands live beside it in utils/ (gpusim-commands.cc,
// record-command.cc, replay-command.cc, run-command.cc), built as the gpusim-cli library.
#include "ns3/distributed-run.h"
#include "ns3/gpusim-commands.h"

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int
main(int argc, char** argv)
{
    // Under mpirun (gpusim built against ns-3 with MPI: scripts/bootstrap.sh --mpi) every
    // process runs the same command on its part of the packet network; process 0 reports.
    const bool distributed = ns3::gpusim::DistributedInit(&argc, &argv);
    std::vector<std::string> args(argv + 1, argv + argc);
    int rc = 0;
    if (!distributed || ns3::gpusim::DistributedRank() == 0)
    {
        rc = ns3::gpusim::GpusimMain(args, std::cout, std::cerr);
    }
    else
    {
        std::ostringstream out;
        std::ostringstream err;
        rc = ns3::gpusim::GpusimMain(args, out, err);
        if (rc != 0)
        {
            std::cerr << "gpusim (MPI process " << ns3::gpusim::DistributedRank()
                      << "): " << err.str() << std::flush;
        }
    }
    ns3::gpusim::DistributedFinalize();
    return rc;
}
