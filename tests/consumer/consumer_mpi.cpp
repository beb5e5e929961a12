// A program using an installed swp's MPI communicator: built with `pkg-config swp-mpi` (or
// meson's dependency('swp-mpi')) by tools/consumer-build.sh, which runs it under mpirun with 2
// ranks (or alone). Each rank all-reduces its rank number over the world. Exit 0 when the sum
// is right; otherwise one `error:` line and exit 1.

#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <stdexcept>
#include <vector>

#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/config.hpp"
#include "swp/engine/runtime.hpp"

static_assert(SWP_HAVE_MPI == 1, "swp-mpi is installed only where the MPI backend is compiled in");

int main(int argc, char** argv) {
  try {
    swp::MpiSession mpi(argc, argv);
    auto world = swp::MpiCommunicator::world();
    swp::Runtime runtime({.backend = swp::Backend::host, .workers = 1});
    const std::vector<std::int64_t> mine{world->rank()};
    std::vector<std::int64_t> sum(1);
    auto done = world->all_reduce(runtime.stream("comm"), std::span<const std::int64_t>(mine),
                                  std::span<std::int64_t>(sum), swp::ReduceOp::sum, "consumer");
    runtime.stream("comm").synchronize();
    done.get();
    const std::int64_t n = world->size();
    if (sum[0] != n * (n - 1) / 2) throw std::runtime_error("all_reduce summed the ranks wrong");
    if (world->rank() == 0) std::printf("ok: swp-mpi consumer, %d rank(s)\n", world->size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
