// swp-gpu-bench: the runtime's own cost per GPU task (issue 62), on a GPU. Built where the
// cuda backend is compiled in; without a GPU it says so and exits 0. Prints `metric` lines
// (docs/gpu.md, "The runtime's cost per GPU task"):
//
//   swp-gpu-bench [--iters N] [--kernel-us U] [--rounds R] [--latency-rounds N]
//
// Overhead: a plan of 16 tasks per iteration on 4 CUDA streams (4 per stream, one lane per
// stream), task (s, k) depending on (s, k-1) on its own stream and on (s-1, k-1) on the
// previous one (a cross-stream wait), each body launching one kernel of U µs (0: empty) that
// stamps the GPU timer as it starts and ends. It runs on both engines in both completion modes
// (CudaCompletion::polling, host_function), and as a raw loop making the calls a hand-written
// program needs for the same work in the same order from one thread (per task: a
// cudaStreamWaitEvent per cross-stream dependency, the launch, a cudaEventRecord). Per
// configuration: wall µs per task, process CPU µs per task (every thread: lanes, workers, the
// poller), the CPU the runtime adds per task over the raw loop, and the GPU's idle time
// between the first kernel's start and the last one's end (its idle gaps), per task and as a
// ratio to the raw loop's. Each figure is the median of R interleaved rounds.
//
// Completion: the time from a kernel's end (seen by the CPU through a flag the kernel writes to
// mapped host memory) to the CPU side seeing the generation recorded after it reached
// (Event::reached), p50 of N, after kernels of 1 µs, 100 µs and 1 ms, in both modes.
//
// Then stream priorities on the GPU (gpu_priority.cpp) and seed 004's split on device buffers
// through a one-rank NCCL communicator (gpu_split.cpp); `--parts` picks (default all:
// overhead,latency,priority,split).

#include <cuda_runtime_api.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_bench.hpp"
#include "gpu_kernels.hpp"
#include "metric.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/task_scope.hpp"

namespace {

using Ctx = swp::IterContext<int>;
using WallClock = std::chrono::steady_clock;

constexpr int streams = 4;
constexpr int per_stream = 4;
constexpr int tasks = streams * per_stream;

// Task (s, k) in one iteration's submission order: by k, then by stream (dependencies first).
constexpr int task_index(int s, int k) { return k * streams + s; }
constexpr int previous_stream(int s) { return (s + streams - 1) % streams; }

struct Options {
  int iters = 2000;
  double kernel_us = 1;
  int rounds = 3;
  int latency_rounds = 200;
  std::vector<std::string> parts{"overhead", "latency", "priority", "split"};
  swp_bench::gpu::SplitOptions split;
};

using swp_bench::gpu::check;

double process_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

// The GPU stamps of one run: two per task instance (start, end), indexed by batch and task.
struct Stamps {
  std::uint64_t* device = nullptr;
  std::size_t count = 0;
  explicit Stamps(int iters) : count(static_cast<std::size_t>(iters) * tasks * 2) {
    check(cudaMalloc(reinterpret_cast<void**>(&device), count * sizeof(std::uint64_t)),
          "cudaMalloc");
  }
  Stamps(const Stamps&) = delete;
  Stamps& operator=(const Stamps&) = delete;
  ~Stamps() { cudaFree(device); }
  [[nodiscard]] std::uint64_t* of(int batch, int task) const {
    return device + (static_cast<std::size_t>(batch) * tasks + static_cast<std::size_t>(task)) * 2;
  }

  // The GPU's idle time (µs) between the first kernel's start and the last one's end: that
  // span minus the union of the kernels' intervals.
  [[nodiscard]] double idle_us() const {
    std::vector<std::uint64_t> host(count);
    check(cudaMemcpy(host.data(), device, count * sizeof(std::uint64_t), cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    for (std::size_t i = 0; i + 1 < count; i += 2) spans.emplace_back(host[i], host[i + 1]);
    std::sort(spans.begin(), spans.end());
    std::uint64_t busy = 0, end = 0;
    for (const auto& [s, e] : spans) {
      const std::uint64_t from = std::max(s, end);
      if (e > from) busy += e - from;
      end = std::max(end, e);
    }
    const std::uint64_t span = end - spans.front().first;
    return static_cast<double>(span - busy) / 1e3;
  }
};

struct Figures {
  double wall_us_per_task = 0;
  double cpu_us_per_task = 0;
  double idle_us_per_task = 0;
};

std::vector<int> batches(int n) {
  std::vector<int> b(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) b[static_cast<std::size_t>(i)] = i;
  return b;
}

Figures measure(int iters, const Stamps& stamps, auto&& run) {
  const double cpu0 = process_cpu_us();
  const auto wall0 = WallClock::now();
  run();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const double wall = std::chrono::duration<double, std::micro>(WallClock::now() - wall0).count();
  const double cpu = process_cpu_us() - cpu0;
  const double n = static_cast<double>(iters) * tasks;
  return {wall / n, cpu / n, stamps.idle_us() / n};
}

swp::Plan<Ctx> overhead_plan(const Stamps& stamps, std::uint64_t ns) {
  swp::Plan<Ctx> plan;
  for (int k = 0; k < per_stream; ++k) {
    for (int s = 0; s < streams; ++s) {
      const int t = task_index(s, k);
      plan.add("T" + std::to_string(s) + "_" + std::to_string(k),
               [&stamps, ns, t](Ctx& ctx, swp::TaskScope& scope) {
                 swp::CudaStream* stream = swp::as_cuda(scope.stream());
                 check(static_cast<cudaError_t>(swp_bench::launch_stamped(
                           stream->native_handle(), stamps.of(ctx.batch, t), ns)),
                       "cudaLaunchKernel");
               },
               // Two stages, so the clock engine overlaps iterations too.
               {.stage = k / 2,
                .stream = "s" + std::to_string(s),
                .thread_group = "lane" + std::to_string(s)});
    }
  }
  for (int k = 1; k < per_stream; ++k) {
    for (int s = 0; s < streams; ++s) {
      const std::string me = "T" + std::to_string(s) + "_" + std::to_string(k);
      plan.intra_iter_deps.push_back({me, "T" + std::to_string(s) + "_" + std::to_string(k - 1)});
      plan.intra_iter_deps.push_back(
          {me, "T" + std::to_string(previous_stream(s)) + "_" + std::to_string(k - 1)});
    }
  }
  return plan;
}

enum class Engine { dataflow, clock };

Figures run_swp(Engine engine, swp::CudaCompletion mode, const Options& o, const Stamps& stamps,
                std::uint64_t ns) {
  swp::Runtime rt(std::make_unique<swp::CudaDevice>(0, mode), {.workers = 2});
  const auto plan = overhead_plan(stamps, ns);
  std::unique_ptr<swp::Pipeline<Ctx>> pipe;
  if (engine == Engine::clock) {
    pipe = std::make_unique<swp::ClockPipeline<Ctx>>(rt, plan);
  } else {
    pipe = std::make_unique<swp::DataFlowPipeline<Ctx>>(rt, plan, 3);
  }
  pipe->run(batches(std::min(o.iters, 200)));  // warm-up: streams, events, lanes, CUDA
  return measure(o.iters, stamps, [&] { pipe->run(batches(o.iters)); });
}

// The same kernels, waits and records, in the same order, from this one thread.
Figures run_raw(const Options& o, const Stamps& stamps, std::uint64_t ns) {
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t s[streams];
  cudaEvent_t done[tasks];
  for (auto& stream : s) check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  for (auto& e : done) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
  const auto loop = [&](int iters) {
    for (int i = 0; i < iters; ++i) {
      for (int k = 0; k < per_stream; ++k) {
        for (int j = 0; j < streams; ++j) {
          if (k > 0)
            check(cudaStreamWaitEvent(s[j], done[task_index(previous_stream(j), k - 1)], 0),
                  "cudaStreamWaitEvent");
          const int t = task_index(j, k);
          check(static_cast<cudaError_t>(swp_bench::launch_stamped(s[j], stamps.of(i, t), ns)),
                "cudaLaunchKernel");
          check(cudaEventRecord(done[t], s[j]), "cudaEventRecord");
        }
      }
    }
  };
  loop(std::min(o.iters, 200));
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const Figures f = measure(o.iters, stamps, [&] { loop(o.iters); });
  for (auto& e : done) cudaEventDestroy(e);
  for (auto& stream : s) cudaStreamDestroy(stream);
  return f;
}

// p50 of the µs from a kernel of `ns`'s end (the flag it writes) to Event::reached.
double completion_seen_us(swp::CudaCompletion mode, std::uint64_t ns, int rounds) {
  swp::CudaDevice device(0, mode);
  auto stream = device.make_stream("latency", 0);
  auto event = device.make_event();
  int* flag = nullptr;
  check(cudaHostAlloc(reinterpret_cast<void**>(&flag), sizeof(int), cudaHostAllocMapped),
        "cudaHostAlloc");
  int* device_flag = nullptr;
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flag), flag, 0),
        "cudaHostGetDevicePointer");
  volatile int* seen_flag = flag;
  std::vector<double> us;
  for (int r = 1; r <= rounds; ++r) {
    *seen_flag = 0;
    check(static_cast<cudaError_t>(
              swp_bench::launch_flagging(stream->native_handle(), ns, device_flag, r)),
          "cudaLaunchKernel");
    const auto generation = stream->record(*event);
    const auto deadline = WallClock::now() + std::chrono::seconds(10);
    while (*seen_flag != r)
      if (WallClock::now() > deadline) throw std::runtime_error("the kernel's flag never came");
    const auto ended = WallClock::now();
    while (!event->reached(generation))
      if (WallClock::now() > deadline) throw std::runtime_error("the record was never seen");
    us.push_back(std::chrono::duration<double, std::micro>(WallClock::now() - ended).count());
  }
  stream->synchronize();
  cudaFreeHost(flag);
  return swp_bench::median(us);
}

const char* mode_name(swp::CudaCompletion mode) {
  return mode == swp::CudaCompletion::polling ? "polling" : "host_function";
}

void overhead(const Options& o) {
  const auto ns = static_cast<std::uint64_t>(o.kernel_us * 1000);
  const Stamps stamps(o.iters);
  struct Config {
    std::string name;
    Engine engine;
    swp::CudaCompletion mode;
    std::vector<Figures> runs;
  };
  std::vector<Config> configs;
  for (Engine e : {Engine::dataflow, Engine::clock})
    for (auto mode : {swp::CudaCompletion::polling, swp::CudaCompletion::host_function})
      configs.push_back(
          {std::string(e == Engine::dataflow ? "dataflow" : "clock") + "_" + mode_name(mode),
           e,
           mode,
           {}});
  std::vector<Figures> raw;
  for (int round = 0; round < o.rounds; ++round) {  // interleaved: drift hits every one alike
    raw.push_back(run_raw(o, stamps, ns));
    for (auto& c : configs) c.runs.push_back(run_swp(c.engine, c.mode, o, stamps, ns));
  }
  const auto med = [](const std::vector<Figures>& runs, double Figures::*field) {
    std::vector<double> v;
    for (const auto& f : runs) v.push_back(f.*field);
    return swp_bench::median(v);
  };
  const double raw_cpu = med(raw, &Figures::cpu_us_per_task);
  const double raw_idle = med(raw, &Figures::idle_us_per_task);
  swp_bench::metric("gpu_overhead_kernel_us", o.kernel_us, "us");
  swp_bench::metric("gpu_overhead_tasks_per_iter", tasks, "tasks");
  swp_bench::metric("gpu_overhead_raw_us_per_task", med(raw, &Figures::wall_us_per_task), "us");
  swp_bench::metric("gpu_overhead_raw_cpu_us_per_task", raw_cpu, "us");
  swp_bench::metric("gpu_overhead_raw_idle_us_per_task", raw_idle, "us");
  for (const auto& c : configs) {
    const std::string p = "gpu_overhead_" + c.name;
    const double cpu = med(c.runs, &Figures::cpu_us_per_task);
    const double idle = med(c.runs, &Figures::idle_us_per_task);
    swp_bench::metric(p + "_us_per_task", med(c.runs, &Figures::wall_us_per_task), "us");
    swp_bench::metric(p + "_cpu_us_per_task", cpu, "us");
    swp_bench::metric(p + "_added_cpu_us_per_task", cpu - raw_cpu, "us");
    swp_bench::metric(p + "_idle_us_per_task", idle, "us");
    swp_bench::metric(p + "_idle_ratio", raw_idle > 0 ? idle / raw_idle : 0, "ratio");
  }
}

void latency(const Options& o) {
  struct Length {
    const char* name;
    std::uint64_t ns;
  };
  for (auto mode : {swp::CudaCompletion::polling, swp::CudaCompletion::host_function})
    for (const Length& l :
         {Length{"1us", 1'000}, Length{"100us", 100'000}, Length{"1ms", 1'000'000}})
      swp_bench::metric(std::string("gpu_completion_seen_us_") + mode_name(mode) + "_" + l.name,
                        completion_seen_us(mode, l.ns, o.latency_rounds), "us");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "swp-gpu-bench: the runtime's own cost per GPU task and its completion latency "
      "(metric lines; docs/gpu.md)"};
  Options o;
  app.add_option("--iters", o.iters, "timed iterations of 16 tasks per configuration")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--kernel-us", o.kernel_us, "each task's kernel in us (0: empty kernels)")
      ->check(CLI::Range(0.0, 10'000.0))
      ->capture_default_str();
  app.add_option("--rounds", o.rounds, "interleaved rounds; figures are their medians")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--latency-rounds", o.latency_rounds, "kernels per completion latency figure")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  app.add_option("--parts", o.parts, "what to run: overhead, latency, priority, split")
      ->check(CLI::IsMember({"overhead", "latency", "priority", "split"}))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--split-iters", o.split.iters, "split: timed iterations per size")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--split-forward-us", o.split.forward_us,
                 "split: the forward kernel per iteration in us")
      ->check(CLI::Range(1.0, 100'000.0))
      ->capture_default_str();
  app.add_option("--split-mb", o.split.megabytes, "split: MB of ids per iteration, per run")
      ->check(CLI::Range(1, 1024))
      ->delimiter(',')
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  if (swp::CudaDevice::count() == 0) {
    std::printf("[skip] swp-gpu-bench: no CUDA device on this machine\n");
    return 0;
  }
  const auto wanted = [&](const char* part) {
    return std::find(o.parts.begin(), o.parts.end(), part) != o.parts.end();
  };
  try {
    if (wanted("overhead")) overhead(o);
    if (wanted("latency")) latency(o);
    if (wanted("priority")) swp_bench::gpu::priority(o.rounds);
    if (wanted("split")) swp_bench::gpu::split(o.split);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
