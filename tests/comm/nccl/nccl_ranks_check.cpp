// The NCCL communicator across processes, one rank per GPU: what one GPU cannot show
// (tools/gpu-check.sh multi runs it on a machine with two GPUs or more; issue 62). Each process
// is one rank; it prints one `PASS`/`FAIL` line per check, prefixed with its rank, and exits
// 1 when a check failed. Without a GPU it says so and exits 0.
//
//   swp-nccl-ranks-check --rank R --size N --id-file PATH [--scenario S] [--timeout-ms T]
//     the ranks find each other through PATH (NcclCommunicator::from_file; rank 0 writes it)
//   mpirun -np N swp-nccl-mpi-ranks-check [--scenario S] [--timeout-ms T]
//     the same over MPI (NcclCommunicator::bootstrap; built where MPI is)
//
// Scenarios (default `all`):
//   all      uneven all_to_all_v on device buffers; the input distribution with its splits
//            fused per process group over two groups (the world and an even/odd split), from
//            host vectors and from device buffers (start_on_device, NcclCompletion::submitted:
//            the tensors wait on the GPU); the order check (one agreed collective, one mismatch
//            failing on every rank, one after it)
//   dies     the last rank exits before an all_reduce; every other rank's fails with
//            CommTimeout naming it within the timeout
//   missing  started with one rank fewer than --size: every rank's init fails with
//            CommTimeout naming it and "init" within the timeout
// Rank r uses GPU r modulo the GPUs visible.

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "swp/comm/input_dist.hpp"
#include "swp/comm/nccl/nccl_communicator.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/engine/runtime.hpp"
#ifdef SWP_RANKS_VIA_MPI
#include "swp/comm/mpi/mpi_communicator.hpp"
#endif

namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

struct Args {
  int rank = -1;
  int size = 0;
  std::string id_file;
  std::string scenario = "all";
  int timeout_ms = 5000;
};

int failures = 0;
int my_rank = -1;

void report(bool ok, const std::string& what) {
  std::printf("rank %d: %s %s\n", my_rank, ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

// Waits for `f` (the communicator's watchdog completes it), up to `limit`.
bool wait_ready(const swp::Future<void>& f, std::chrono::milliseconds limit) {
  const auto deadline = SteadyClock::now() + limit;
  while (!f.ready() && SteadyClock::now() < deadline) std::this_thread::sleep_for(100us);
  return f.ready();
}

// The error message of a ready future, or "" when it succeeded.
std::string error_of(const swp::Future<void>& f) {
  try {
    f.get();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// A device buffer of `n` int64 values, freed at scope end.
struct DeviceIds {
  std::int64_t* p = nullptr;
  std::size_t n = 0;
  explicit DeviceIds(std::size_t count) : n(count) {
    if (cudaMalloc(&p, (n == 0 ? 1 : n) * sizeof(std::int64_t)) != cudaSuccess)
      throw std::runtime_error("cudaMalloc failed");
  }
  DeviceIds(const DeviceIds&) = delete;
  DeviceIds& operator=(const DeviceIds&) = delete;
  ~DeviceIds() { cudaFree(p); }
};

// Rank `from` sends rank `to` (from + 1) * (to + 2) ids, each from * 1000 + to: every pair a
// different count.
std::size_t pair_count(int from, int to) { return static_cast<std::size_t>((from + 1) * (to + 2)); }

void uneven_all_to_all_v(swp::NcclCommunicator& comm, swp::Stream& stream) {
  const int me = comm.rank();
  const int n = comm.size();
  std::vector<std::size_t> send_counts, recv_counts;
  std::vector<std::int64_t> send;
  std::size_t recv_total = 0;
  for (int r = 0; r < n; ++r) {
    send_counts.push_back(pair_count(me, r));
    recv_counts.push_back(pair_count(r, me));
    recv_total += recv_counts.back();
    send.insert(send.end(), send_counts.back(), std::int64_t{me} * 1000 + r);
  }
  DeviceIds in(send.size()), out(recv_total);
  cudaMemcpy(in.p, send.data(), send.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice);
  auto done =
      comm.all_to_all_v(stream, std::span<const std::int64_t>(in.p, in.n), send_counts,
                        std::span<std::int64_t>(out.p, out.n), recv_counts, "uneven all_to_all_v");
  stream.synchronize();
  if (!wait_ready(done, 30s) || !error_of(done).empty()) {
    report(false, "uneven all_to_all_v on device buffers: " + error_of(done));
    return;
  }
  std::vector<std::int64_t> got(recv_total);
  cudaMemcpy(got.data(), out.p, recv_total * sizeof(std::int64_t), cudaMemcpyDeviceToHost);
  bool ok = true;
  std::size_t at = 0;
  for (int r = 0; r < n; ++r)
    for (std::size_t k = 0; k < recv_counts[static_cast<std::size_t>(r)]; ++k)
      ok = ok && got[at++] == std::int64_t{r} * 1000 + me;
  report(ok, "uneven all_to_all_v on device buffers (" + std::to_string(recv_total) + " ids in)");
}

// Module `m`'s input on this rank for a group of `n` ranks: rank r gets m + r + 1 ids, each
// me * 100 + m * 10 + r.
swp::ModuleInput module_input(int me, int m, int n) {
  swp::ModuleInput in;
  for (int r = 0; r < n; ++r)
    in.to_rank.emplace_back(static_cast<std::size_t>(m + r + 1),
                            std::int64_t{me} * 100 + m * 10 + r);
  return in;
}

void fused_splits_over_groups(swp::NcclCommunicator& world, swp::Stream& stream) {
  const int me = world.rank();
  auto half = world.split_by_color(me % 2);
  swp::InputDist dist;
  dist.add_module("ebc", world).add_module("ec", world).add_module("half", *half);
  std::map<std::string, swp::ModuleInput> inputs{
      {"ebc", module_input(me, 0, world.size())},
      {"ec", module_input(me, 1, world.size())},
      {"half", module_input(half->rank(), 2, half->size())}};
  auto batch = dist.start(stream, inputs, "InputDist");
  bool ok = dist.splits_collectives() == 2 && batch.splits().size() == 2;
  for (const auto& f : batch.splits()) ok = ok && wait_ready(f, 30s) && error_of(f).empty();
  for (const char* module : {"ebc", "ec", "half"}) {
    const auto f = batch.tensors(module);
    stream.synchronize();
    if (!wait_ready(f, 30s) || !error_of(f).empty()) {
      report(false, std::string("input distribution, module ") + module + ": " + error_of(f));
      return;
    }
    const swp::ModuleOutput out = batch.take(module);
    const bool in_half = std::string_view(module) == "half";
    const int m = in_half ? 2 : (std::string_view(module) == "ec" ? 1 : 0);
    const int group_size = in_half ? half->size() : world.size();
    const int my_place = in_half ? half->rank() : me;
    for (int r = 0; r < group_size; ++r) {
      const auto ids = out.from(r);
      ok = ok && ids.size() == static_cast<std::size_t>(m + my_place + 1);
      for (const auto id : ids) ok = ok && id == std::int64_t{r} * 100 + m * 10 + my_place;
    }
  }
  report(ok, "input distribution, splits fused per group over 2 groups (world, even/odd)");
}

// The same distribution from device buffers: each module's ids on the GPU, received into a
// buffer per module; the tensors complete once queued (NcclCompletion::submitted) and the
// stream waits for them on the GPU before they are read back.
void fused_splits_on_device(swp::NcclCommunicator& world, swp::Stream& stream) {
  const int me = world.rank();
  auto half = world.split_by_color(me % 2);
  world.set_completion(swp::NcclCompletion::submitted);
  half->set_completion(swp::NcclCompletion::submitted);
  struct Module {
    const char* name;
    swp::NcclCommunicator* group;
    int m;
  };
  const Module modules[] = {{"ebc", &world, 0}, {"ec", &world, 1}, {"half", half.get(), 2}};
  swp::InputDist dist;
  std::map<std::string, swp::DeviceModuleInput> inputs;
  std::vector<std::unique_ptr<DeviceIds>> buffers;
  for (const Module& mod : modules) {
    dist.add_module(mod.name, *mod.group);
    const swp::ModuleInput host = module_input(mod.group->rank(), mod.m, mod.group->size());
    swp::DeviceModuleInput in;
    std::vector<std::int64_t> flat;
    for (const auto& ids : host.to_rank) {
      in.to_rank.push_back(ids.size());
      flat.insert(flat.end(), ids.begin(), ids.end());
    }
    buffers.push_back(std::make_unique<DeviceIds>(flat.size()));
    cudaMemcpy(buffers.back()->p, flat.data(), flat.size() * sizeof(std::int64_t),
               cudaMemcpyHostToDevice);
    in.ids = buffers.back()->p;
    in.recv_capacity = 64;  // at most (m + place + 1) ids from each of at most 8 ranks
    buffers.push_back(std::make_unique<DeviceIds>(in.recv_capacity));
    in.recv = buffers.back()->p;
    inputs[mod.name] = std::move(in);
  }
  auto batch = dist.start_on_device(stream, inputs, "InputDist on device");
  bool ok = batch.splits().size() == 2;
  for (const auto& f : batch.splits()) ok = ok && wait_ready(f, 30s) && error_of(f).empty();
  for (const Module& mod : modules) {
    const auto f = batch.tensors(mod.name);
    if (!wait_ready(f, 30s) || !error_of(f).empty()) {
      report(false, std::string("input distribution on device buffers, module ") + mod.name + ": " +
                        error_of(f));
      return;
    }
    stream.wait(*f.event(), f.event_generation());  // on the GPU
  }
  stream.synchronize();
  for (const Module& mod : modules) {
    const swp::DeviceModuleOutput out = batch.received(mod.name);
    std::vector<std::int64_t> got(out.size());
    cudaMemcpy(got.data(), out.values, got.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost);
    const int place = mod.group->rank();
    std::size_t at = 0;
    for (int r = 0; r < mod.group->size(); ++r) {
      const std::size_t count = out.from_rank[static_cast<std::size_t>(r)];
      ok = ok && count == static_cast<std::size_t>(mod.m + place + 1);
      for (std::size_t k = 0; k < count; ++k)
        ok = ok && got[at++] == std::int64_t{r} * 100 + mod.m * 10 + place;
    }
  }
  world.set_completion(swp::NcclCompletion::finished);
  report(ok, "input distribution on device buffers, splits fused per group over 2 groups");
}

void order_check(swp::NcclCommunicator& comm, swp::Stream& stream) {
  comm.set_order_check(true);
  const int me = comm.rank();
  std::vector<std::int64_t> one{1}, sum(1, 0);
  auto agreed = comm.all_reduce(stream, std::span<const std::int64_t>(one),
                                std::span<std::int64_t>(sum), swp::ReduceOp::sum, "agreed");
  stream.synchronize();
  report(wait_ready(agreed, 30s) && error_of(agreed).empty() && sum[0] == comm.size(),
         "order check: the same collective on every rank runs");
  // Rank 0 calls 'A', the others 'B': nothing runs, every rank fails naming each rank's call.
  auto mismatch =
      comm.all_reduce(stream, std::span<const std::int64_t>(one), std::span<std::int64_t>(sum),
                      swp::ReduceOp::sum, me == 0 ? "A" : "B");
  stream.synchronize();
  const std::string why = wait_ready(mismatch, 30s) ? error_of(mismatch) : "(not ready)";
  report(contains(why,
                  "the ranks called different collectives here (order check: rank 0 "
                  "all_reduce 'A' (1 i64), rank 1 all_reduce 'B' (1 i64)"),
         "order check: a mismatch fails on every rank, naming each call: " + why);
  sum[0] = 0;
  auto after = comm.all_reduce(stream, std::span<const std::int64_t>(one),
                               std::span<std::int64_t>(sum), swp::ReduceOp::sum, "after");
  stream.synchronize();
  report(wait_ready(after, 30s) && error_of(after).empty() && sum[0] == comm.size(),
         "order check: the communicator goes on after a mismatch");
  comm.set_order_check(false);
}

void a_rank_dies(swp::NcclCommunicator& comm, swp::Stream& stream, const Args& args) {
  if (comm.rank() == comm.size() - 1) {
    std::printf("rank %d: exiting before the all_reduce, as planned\n", comm.rank());
    std::fflush(stdout);
    std::_Exit(0);
  }
  std::vector<std::int64_t> one{1}, sum(1, 0);
  const auto start = SteadyClock::now();
  auto f = comm.all_reduce(stream, std::span<const std::int64_t>(one), std::span<std::int64_t>(sum),
                           swp::ReduceOp::sum, "without the dead");
  const bool ready = wait_ready(f, std::chrono::milliseconds(args.timeout_ms * 4 + 30'000));
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
  bool timed_out = false;
  std::string why = "(not ready)";
  if (ready) {
    try {
      f.get();
      why = "(it succeeded)";
    } catch (const swp::CommTimeout& e) {
      timed_out = e.rank() == comm.rank();
      why = e.what();
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  report(timed_out && took.count() < args.timeout_ms * 4 + 10'000,
         "a dead rank: the all_reduce failed with CommTimeout in " + std::to_string(took.count()) +
             " ms: " + why);
}

std::unique_ptr<swp::NcclCommunicator> connect(const Args& args, swp::CudaDevice& device,
                                               swp::Stream& host_stream) {
#ifdef SWP_RANKS_VIA_MPI
  static auto world = swp::MpiCommunicator::world();
  world->set_timeout(std::chrono::milliseconds(args.timeout_ms));
  (void)device;
  return swp::NcclCommunicator::bootstrap(*world, host_stream, device);
#else
  (void)host_stream;
  return swp::NcclCommunicator::from_file(args.id_file, args.rank, args.size, device,
                                          std::chrono::milliseconds(args.timeout_ms));
#endif
}

bool parse(int argc, char** argv, Args& args) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--rank") {
      args.rank = std::atoi(value);
    } else if (flag == "--size") {
      args.size = std::atoi(value);
    } else if (flag == "--id-file") {
      args.id_file = value;
    } else if (flag == "--scenario") {
      args.scenario = value;
    } else if (flag == "--timeout-ms") {
      args.timeout_ms = std::atoi(value);
    } else {
      std::fprintf(stderr, "error: unknown flag %s\n", argv[i]);
      return false;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "error: flag %s has no value\n", argv[argc - 1]);
    return false;
  }
  const bool known =
      args.scenario == "all" || args.scenario == "dies" || args.scenario == "missing";
  if (!known) {
    std::fprintf(stderr, "error: --scenario %s: expected all, dies or missing\n",
                 args.scenario.c_str());
    return false;
  }
  if (args.timeout_ms <= 0) {
    std::fprintf(stderr, "error: --timeout-ms must be positive\n");
    return false;
  }
#ifndef SWP_RANKS_VIA_MPI
  if (args.size < 1 || args.rank < 0 || args.rank >= args.size || args.id_file.empty()) {
    std::fprintf(stderr, "error: --rank R --size N --id-file PATH are required (0 <= R < N)\n");
    return false;
  }
#endif
  return true;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef SWP_RANKS_VIA_MPI
  swp::MpiSession mpi(argc, argv);
#endif
  Args args;
  if (!parse(argc, argv, args)) return 2;
  const int gpus = swp::CudaDevice::count();
  if (gpus == 0) {
    std::printf("[skip] nccl ranks check: no CUDA device on this machine\n");
    return 0;
  }
#ifdef SWP_RANKS_VIA_MPI
  {
    auto world = swp::MpiCommunicator::world();
    args.rank = world->rank();
    args.size = world->size();
  }
#endif
  my_rank = args.rank;
  try {
    auto gpu = std::make_unique<swp::CudaDevice>(args.rank % gpus);
    swp::CudaDevice& device = *gpu;
    swp::Runtime rt(std::move(gpu), {.workers = 1});
    swp::Runtime host({.backend = swp::Backend::host, .workers = 1});
    const auto start = SteadyClock::now();
    std::unique_ptr<swp::NcclCommunicator> comm;
    try {
      comm = connect(args, device, host.stream("bootstrap"));
    } catch (const swp::CommTimeout& e) {
      const auto took =
          std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
      report(args.scenario == "missing" && e.rank() == args.rank && e.op() == "init",
             "init with a rank missing: CommTimeout in " + std::to_string(took.count()) +
                 " ms: " + e.what());
      return failures == 0 ? 0 : 1;
    }
    if (args.scenario == "missing") {
      report(false, "init with a rank missing returned a communicator");
      return 1;
    }
    report(comm->rank() == args.rank && comm->size() == args.size,
           "init: rank " + std::to_string(comm->rank()) + " of " + std::to_string(comm->size()) +
               " on GPU " + std::to_string(device.ordinal()));
    comm->set_timeout(std::chrono::milliseconds(args.timeout_ms));
    swp::Stream& stream = rt.stream("comm");
    if (args.scenario == "dies") {
      a_rank_dies(*comm, stream, args);
    } else {
      uneven_all_to_all_v(*comm, stream);
      fused_splits_over_groups(*comm, stream);
      fused_splits_on_device(*comm, stream);
      order_check(*comm, stream);
    }
    stream.synchronize();
    if (args.scenario == "dies") std::_Exit(failures == 0 ? 0 : 1);  // a dead peer: no teardown
  } catch (const std::exception& e) {
    report(false, std::string("unexpected error: ") + e.what());
  }
  return failures == 0 ? 0 : 1;
}
