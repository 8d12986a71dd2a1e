// gpusim command-line front door; the commands live beside it in utils/ (gpusim-commands.cc,
// record-command.cc, replay-command.cc, run-command.cc), built as the gpusim-cli library.
#include "ns3/gpusim-commands.h"

#include <iostream>
#include <string>
#include <vector>

int
main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    return ns3::gpusim::GpusimMain(args, std::cout, std::cerr);
}
