// swp: the command-line face of the library (contract in DESIGN.md).

#include "cli.hpp"

int main(int argc, char** argv) { return swp::cli::run_cli(argc, argv); }
