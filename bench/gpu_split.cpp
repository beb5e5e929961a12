// swp-gpu-bench's split benchmark (gpu_bench.hpp): seed 004 on device buffers.

#include "gpu_bench.hpp"
#include "metric.hpp"

#if SWP_GPU_BENCH_NCCL

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "gpu_kernels.hpp"
#include "swp/comm/input_dist.hpp"
#include "swp/comm/nccl/nccl_communicator.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_stream.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp_bench::gpu {

namespace split_bench {

struct Fields {
  swp::InputDist::Batch dist;  // the iteration's input distribution (InputDist's, Forward's)
};
using Ctx = swp::IterContext<int, Fields>;
using WallClock = std::chrono::steady_clock;

constexpr std::size_t slots = 4;  // more than the 3 iterations in flight

// Device memory for `n` int64, freed at scope end.
struct DeviceIds {
  std::int64_t* p = nullptr;
  explicit DeviceIds(std::size_t n) {
    check(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(std::int64_t)), "cudaMalloc");
  }
  DeviceIds(const DeviceIds&) = delete;
  DeviceIds& operator=(const DeviceIds&) = delete;
  ~DeviceIds() { cudaFree(p); }
};

// What one size runs on: the ids staged in pinned memory, each slot's device buffers (the
// H2D copy's destination, the exchange's receive buffer) and the forward kernel's stamps.
struct Buffers {
  std::size_t n;
  std::int64_t* pinned = nullptr;
  std::vector<std::unique_ptr<DeviceIds>> ids, recv;
  DeviceIds stamps{2 * slots};  // the forward kernels' (GPU timer ns; read by nobody)
  explicit Buffers(std::size_t count) : n(count) {
    check(cudaMallocHost(reinterpret_cast<void**>(&pinned), n * sizeof(std::int64_t)),
          "cudaMallocHost");
    std::iota(pinned, pinned + n, std::int64_t{7});
    for (std::size_t s = 0; s < slots; ++s) {
      ids.push_back(std::make_unique<DeviceIds>(n));
      recv.push_back(std::make_unique<DeviceIds>(n));
    }
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers() { cudaFreeHost(pinned); }
  [[nodiscard]] std::uint64_t* stamp(std::size_t slot) const {
    return reinterpret_cast<std::uint64_t*>(stamps.p) + 2 * slot;
  }
};

cudaStream_t native(swp::Stream& stream) { return swp::as_cuda(stream)->native_handle(); }

swp::Plan<Ctx> training_step(Buffers& b, swp::InputDist& dist, std::uint64_t forward_ns) {
  swp::Plan<Ctx> plan;
  plan.add("H2D",
           [&b](Ctx& ctx, swp::TaskScope& scope) {
             const auto slot = static_cast<std::size_t>(ctx.iter_idx) % slots;
             check(cudaMemcpyAsync(b.ids[slot]->p, b.pinned, b.n * sizeof(std::int64_t),
                                   cudaMemcpyHostToDevice, native(scope.stream())),
                   "cudaMemcpyAsync (H2D)");
           },
           {.stage = 0, .stream = "memcpy", .thread_group = "h2d", .stream_priority = -1});
  plan.add("InputDist",
           [&b, &dist](Ctx& ctx, swp::TaskScope& scope) {
             const auto slot = static_cast<std::size_t>(ctx.iter_idx) % slots;
             ctx.dist = dist.start_on_device(
                 scope.stream(),
                 {{"ids", swp::DeviceModuleInput{b.ids[slot]->p, {b.n}, b.recv[slot]->p, b.n}}},
                 "InputDist");
           },
           {.stage = 1, .stream = "data_dist", .thread_group = "dist", .stream_priority = -1});
  plan.add("Forward",
           [&b, forward_ns](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
             // The CPU waits until the ids' exchange is queued, the GPU until it is done.
             co_await ctx.dist.tensors("ids").on(scope.stream());
             const auto slot = static_cast<std::size_t>(ctx.iter_idx) % slots;
             check(static_cast<cudaError_t>(
                       launch_stamped(native(scope.stream()), b.stamp(slot), forward_ns)),
                   "cudaLaunchKernel (Forward)");
           },
           {.stage = 2, .stream = "compute", .thread_group = "compute"});
  plan.intra_iter_deps = {{"InputDist", "H2D"}, {"Forward", "InputDist"}};
  return plan;
}

// Device µs per call of `work` on `stream`, timed alone with CUDA events over `calls` calls.
template <class Work>
double device_us(cudaStream_t stream, int calls, Work&& work) {
  cudaEvent_t start = nullptr, end = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  work();  // warm
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < calls; ++i) work();
  check(cudaEventRecord(end, stream), "cudaEventRecord");
  check(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  return static_cast<double>(ms) * 1000.0 / calls;
}

void run_size(int megabytes, const SplitOptions& o) {
  const std::size_t n = static_cast<std::size_t>(megabytes) * (std::size_t{1} << 20) / 8;
  const auto forward_ns = static_cast<std::uint64_t>(o.forward_us * 1000);
  swp::Runtime rt(std::make_unique<swp::CudaDevice>(0), {.workers = 2});
  auto& device = static_cast<swp::CudaDevice&>(rt.device());
  auto comm = swp::NcclCommunicator::init(swp::NcclUniqueId::create(), 0, 1, device);
  comm->set_completion(swp::NcclCompletion::submitted);
  Buffers b(n);
  swp::InputDist dist;
  dist.add_module("ids", *comm);
  const auto plan = training_step(b, dist, forward_ns);
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 3);
  pipe.run(std::vector<int>(30, 0));  // warm-up: streams, NCCL, the pools
  const auto t0 = WallClock::now();
  pipe.run(std::vector<int>(static_cast<std::size_t>(o.iters), 0));
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const double pipelined =
      std::chrono::duration<double, std::micro>(WallClock::now() - t0).count() / o.iters;
  // Every slot received the ids the H2D copy brought (one rank sends itself all of them).
  std::vector<std::int64_t> got(n);
  check(cudaMemcpy(got.data(), b.recv[0]->p, n * sizeof(std::int64_t), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  if (!std::equal(got.begin(), got.end(), b.pinned))
    throw std::runtime_error("the ids received differ from the ids sent (" +
                             std::to_string(megabytes) + " MB)");
  // The bound: the busiest stream's device time per iteration, each task's work timed alone.
  const double h2d = device_us(native(rt.stream("memcpy")), 20, [&] {
    check(cudaMemcpyAsync(b.ids[0]->p, b.pinned, n * sizeof(std::int64_t), cudaMemcpyHostToDevice,
                          native(rt.stream("memcpy"))),
          "cudaMemcpyAsync");
  });
  const std::vector<std::size_t> counts{n};
  swp::Stream& data_dist = rt.stream("data_dist");
  const double exchange = device_us(native(data_dist), 20, [&] {
    (void)comm->all_to_all_v(data_dist, std::span<const std::int64_t>(b.ids[0]->p, n), counts,
                             std::span<std::int64_t>(b.recv[0]->p, n), counts, "bound");
  });
  const double forward = device_us(native(rt.stream("compute")), 20, [&] {
    check(static_cast<cudaError_t>(
              launch_stamped(native(rt.stream("compute")), b.stamp(0), forward_ns)),
          "cudaLaunchKernel");
  });
  data_dist.synchronize();
  const double bound = std::max({h2d, exchange, forward});
  const std::string p = "gpu_split_" + std::to_string(megabytes) + "mb_";
  metric(p + "h2d_device_us", h2d, "us");
  metric(p + "exchange_device_us", exchange, "us");
  metric(p + "forward_device_us", forward, "us");
  metric(p + "bound_us_per_iter", bound, "us");
  metric(p + "us_per_iter", pipelined, "us");
  metric(p + "efficiency", bound / pipelined, "ratio");
}

}  // namespace split_bench

void split(const SplitOptions& options) {
  for (int megabytes : options.megabytes) split_bench::run_size(megabytes, options);
}

}  // namespace swp_bench::gpu

#else

#include <cstdio>

namespace swp_bench::gpu {

void split(const SplitOptions&) {
  std::printf("[skip] swp-gpu-bench split: built without the nccl backend\n");
}

}  // namespace swp_bench::gpu

#endif
