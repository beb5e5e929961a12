// mpi_collectives: the MPI communicator between processes (docs/comm.md). Each rank times
// stream-ordered collectives on a host stream and rank 0 prints `metric` lines:
//   mpirun -np 4 build/examples/mpi_collectives [--rounds N]   (N >= 1, 50 by default)
// all_reduce of 256 floats (latency) and of 4 MiB of floats (bandwidth), all_to_all_v of
// per-pair splits (an input distribution's exchange), each checked against the serial result.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <vector>

#include "common/cli.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/runtime.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Median microseconds of `rounds` runs of `op` (each queued on `stream`, then waited for).
template <class Op>
double median_us(swp::Stream& stream, int rounds, Op op) {
  std::vector<double> us;
  for (int i = 0; i < rounds; ++i) {
    const auto start = Clock::now();
    auto done = op();
    stream.synchronize();
    done.get();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  swp::MpiSession mpi(argc, argv);
  CLI::App app{"Stream-ordered MPI collectives between ranks, timed (docs/comm.md).",
               "mpi_collectives"};
  int rounds = 50;
  app.add_option("--rounds", rounds, "timed rounds of each small collective (a fifth of them "
                                     "for the big ones)")
      ->check(examples::integer_in(1, 1'000'000));
  // Every rank parses the same command line: a bad flag ends each of them with exit 2.
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
  try {
    auto world = swp::MpiCommunicator::world();
    swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
    swp::Stream& stream = rt.stream("comm");
    const int n = world->size();
    const int me = world->rank();

    std::vector<float> small(256, static_cast<float>(me)), small_sum(256);
    const double small_us = median_us(stream, rounds, [&] {
      return world->all_reduce(stream, std::span<const float>(small), std::span<float>(small_sum),
                               swp::ReduceOp::sum, "small");
    });
    const float expected = static_cast<float>(n * (n - 1) / 2);
    if (small_sum[0] != expected) throw std::runtime_error("all_reduce gave a wrong sum");

    std::vector<float> big(1 << 20, 1.0f), big_sum(big.size());
    const double big_us = median_us(stream, std::max(1, rounds / 5), [&] {
      return world->all_reduce(stream, std::span<const float>(big), std::span<float>(big_sum),
                               swp::ReduceOp::sum, "big");
    });
    if (big_sum.back() != static_cast<float>(n)) throw std::runtime_error("wrong big sum");

    // Splits: rank s sends (s + r) % 7 + 1 thousand i64 to rank r.
    std::vector<std::size_t> send_counts, recv_counts;
    for (int r = 0; r < n; ++r) {
      send_counts.push_back(static_cast<std::size_t>((me + r) % 7 + 1) * 1000);
      recv_counts.push_back(static_cast<std::size_t>((r + me) % 7 + 1) * 1000);
    }
    std::size_t send_total = 0, recv_total = 0;
    for (std::size_t c : send_counts) send_total += c;
    for (std::size_t c : recv_counts) recv_total += c;
    std::vector<std::int64_t> send(send_total, me), recv(recv_total, -1);
    const double a2a_us = median_us(stream, rounds, [&] {
      return world->all_to_all_v(stream, std::span<const std::int64_t>(send), send_counts,
                                 std::span<std::int64_t>(recv), recv_counts, "splits");
    });
    std::size_t at = 0;
    for (int r = 0; r < n; ++r)
      for (std::size_t k = 0; k < recv_counts[static_cast<std::size_t>(r)]; ++k, ++at)
        if (recv[at] != r) throw std::runtime_error("all_to_all_v delivered a wrong element");

    if (me == 0) {
      const double bytes = static_cast<double>(big.size() * sizeof(float));
      std::printf("mpi_collectives: %d ranks, median of %d rounds\n", n, rounds);
      std::printf("metric mpi_ranks %d count\n", n);
      std::printf("metric mpi_all_reduce_1kib_us %.1f us\n", small_us);
      std::printf("metric mpi_all_reduce_4mib_us %.1f us\n", big_us);
      std::printf("metric mpi_all_reduce_4mib_gb_per_s %.3f GB/s\n", bytes / big_us / 1e3);
      std::printf("metric mpi_all_to_all_v_us %.1f us\n", a2a_us);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
