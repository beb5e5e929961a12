// swp-gpu-bench's priority check (gpu_bench.hpp): a plan's stream priority on the GPU.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu_bench.hpp"
#include "gpu_kernels.hpp"
#include "metric.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_stream.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace swp_bench::gpu {

namespace priority_check {

using Ctx = swp::IterContext<int>;

// The fraction of the long kernel's span (first block start to last block end) at which a
// copy kernel on `copy_stream`, launched once the long kernel runs, ended.
double copy_end_fraction(swp::CudaStream& long_stream, swp::CudaStream& copy_stream,
                         std::uint64_t* spans, std::int64_t* dst, const std::int64_t* src,
                         std::uint64_t n) {
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  const std::uint64_t init[4] = {~std::uint64_t{0}, 0, ~std::uint64_t{0}, 0};
  check(cudaMemcpy(spans, init, sizeof init, cudaMemcpyHostToDevice), "cudaMemcpy");
  // 32 one-thread blocks fill an SM's block slots: 100 waves of 50 us keep every SM busy for
  // about 5 ms, and a block of another kernel starts only where one of them ended.
  const auto blocks = static_cast<unsigned>(sms) * 32U * 100U;
  check(static_cast<cudaError_t>(
            launch_spin_grid(long_stream.native_handle(), blocks, 50'000, spans)),
        "cudaLaunchKernel (the long kernel)");
  std::this_thread::sleep_for(std::chrono::microseconds(500));  // it runs: waves are queued
  check(static_cast<cudaError_t>(launch_copy(copy_stream.native_handle(), dst, src, n,
                                             static_cast<unsigned>(sms) * 2U, spans + 2)),
        "cudaLaunchKernel (the copy)");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::uint64_t got[4] = {};
  check(cudaMemcpy(got, spans, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy");
  const double span = static_cast<double>(got[1] - got[0]);
  return span > 0 ? static_cast<double>(static_cast<std::int64_t>(got[3] - got[0])) / span : 1.0;
}

}  // namespace priority_check

void priority(int rounds) {
  using priority_check::Ctx;
  swp::Runtime rt(std::make_unique<swp::CudaDevice>(0), {.workers = 1});
  auto& device = static_cast<swp::CudaDevice&>(rt.device());
  const auto [least, greatest] = device.priority_range();
  // The plan gives memcpy the highest priority the device has (the runtime clamps what a plan
  // asks for: TorchRec's -1 is within every range) and compute the lowest.
  swp::Plan<Ctx> plan;
  plan.add("Copy", [](Ctx&) {}, {.stage = 0, .stream = "memcpy", .stream_priority = greatest});
  plan.add("Compute", [](Ctx&) {}, {.stage = 1, .stream = "compute", .stream_priority = least});
  plan.intra_iter_deps = {{"Compute", "Copy"}};
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  pipe.run(std::vector<int>(2, 0));
  swp::CudaStream& high = *swp::as_cuda(rt.stream("memcpy"));
  swp::CudaStream& low = *swp::as_cuda(rt.stream("compute"));
  swp::CudaStream& same = *swp::as_cuda(rt.stream("compute_twin", least));
  int reached = 0;
  check(cudaStreamGetPriority(high.native_handle(), &reached), "cudaStreamGetPriority");
  metric("gpu_priority_range_greatest", greatest, "priority");
  metric("gpu_priority_memcpy_stream", reached, "priority");
  metric("gpu_priority_plan_reaches_stream", reached == greatest && high.priority() == greatest,
         "bool");

  constexpr std::uint64_t n = 1U << 20;  // 8 MB of int64
  std::uint64_t* spans = nullptr;
  std::int64_t *src = nullptr, *dst = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&spans), 4 * sizeof(std::uint64_t)), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&src), n * sizeof(std::int64_t)), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&dst), n * sizeof(std::int64_t)), "cudaMalloc");
  check(cudaMemset(src, 1, n * sizeof(std::int64_t)), "cudaMemset");
  std::vector<double> high_end, same_end;
  for (int r = 0; r < rounds; ++r) {  // interleaved: drift hits both alike
    high_end.push_back(priority_check::copy_end_fraction(low, high, spans, dst, src, n));
    same_end.push_back(priority_check::copy_end_fraction(low, same, spans, dst, src, n));
  }
  cudaFree(dst);
  cudaFree(src);
  cudaFree(spans);
  metric("gpu_priority_copy_end_fraction_high", median(high_end), "ratio");
  metric("gpu_priority_copy_end_fraction_same", median(same_end), "ratio");
}

}  // namespace swp_bench::gpu
