// gpusim command-line front door; the commands live in helper/gpusim-commands.cc.
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
