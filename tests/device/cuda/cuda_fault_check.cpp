// A real device fault under a pipeline on the GPU (issue 58), in a process of its own: a
// kernel that traps breaks the whole CUDA context, so nothing else may run after it here.
// A task's stream work faults in iteration 5 (Stream::enqueue_fault launches a trapping
// kernel); the run must fail with a TaskError naming that task and iteration within 1 s, in
// the completion mode given (polling, or host_function, whose host functions never run after
// a fault). tools/gpu-check.sh runs it once per mode. Without a GPU it says so and exits 0.
//   swp-cuda-fault-check polling|host_function

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "swp/device/cuda/cuda_device.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/task_scope.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc != 2 || (std::strcmp(argv[1], "polling") != 0 &&
                    std::strcmp(argv[1], "host_function") != 0)) {
    std::fprintf(stderr, "usage: swp-cuda-fault-check polling|host_function\n");
    return 2;
  }
  if (swp::CudaDevice::count() == 0) {
    std::printf("[skip] cuda fault check: no CUDA device on this machine\n");
    return 0;
  }
  const auto completion = std::strcmp(argv[1], "polling") == 0
                              ? swp::CudaCompletion::polling
                              : swp::CudaCompletion::host_function;
  using Ctx = swp::IterContext<int>;
  swp::Plan<Ctx> plan;
  auto load = plan.add(
      "Load",
      [](Ctx& ctx, swp::TaskScope& scope) {
        scope.device_work(20us);
        return ctx.batch;
      },
      {.stage = 0, .stream = "memcpy"});
  plan.add(
      "Compute",
      [load](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
        const int batch = co_await ctx.get(load);
        scope.device_work(50us);
        if (batch == 5) scope.stream().enqueue_fault("trap");
      },
      {.stage = 1, .stream = "compute"}, swp::reads(load));
  swp::Runtime rt(std::make_unique<swp::CudaDevice>(0, completion), {.workers = 2});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  pipe.set_timeouts({.retire = 60s, .drain = 60s});
  pipe.retire_after_device();
  std::vector<int> batches(200);
  for (int i = 0; i < 200; ++i) batches[i] = i;
  pipe.fill_pipeline(batches);
  const auto start = std::chrono::steady_clock::now();
  std::string outcome = "the fault did not surface";
  bool ok = false;
  try {
    while (pipe.progress()) {
    }
  } catch (const swp::TaskError& e) {
    outcome = e.what();
    ok = e.task() == "Compute" && e.iter() == 5;
  } catch (const std::exception& e) {
    outcome = std::string("not a TaskError: ") + e.what();
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ok = ok && ms < 1000;
  std::printf("metric cuda_fault_surfaced_ms_%s %.1f ms\n", argv[1], ms);
  std::printf("%s: cuda fault (%s): %s\n", ok ? "PASS" : "FAIL", argv[1], outcome.c_str());
  // The context is broken: the pipeline's and the runtime's teardown may report CUDA errors;
  // leave without it (what a process with a faulted GPU does).
  std::fflush(stdout);
  std::_Exit(ok ? 0 : 1);
}
