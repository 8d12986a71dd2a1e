// gpusim command-line front door (subcommands are implemented in helper/gpusim-commands.cc).
#include <cstdio>

int
main(int argc, char** argv)
{
    std::fprintf(stderr, "usage: gpusim <collective|replay|record|simulate> [options]\n");
    return argc > 1 ? 2 : 0;
}
