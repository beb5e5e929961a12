// A training step on the GPU, written as a SparseDist plan (seed 000) and run by both engines
// on the cuda backend against the serial baseline:
//
//   H2D        stage 0, stream "h2d":        ids, dense targets from pinned buffers
//   InputDist  stage 1, stream "input_dist": a stand-in kernel for the all-to-all of ids
//   Forward    stage 2, stream "compute":    embedding gather, MLP (cuBLAS), ReLU, MSE loss
//   Backward   stage 2, stream "compute":    gradients (cuBLAS), SGD update of the MLP
//
// Forward of iteration i reads the weights Backward of i - 1 wrote: an inter-iteration
// dependency, so every engine trains the same model as the serial loop.
// Prints metric lines: serial and pipelined µs per iteration, the bound (the busiest stream's
// per-iteration device time, measured task by task with CUDA timing events), the efficiency
// (bound / pipelined) and the CPU time bodies spend submitting, per task.
// Usage: gpu_train_step [--iters N] [--nvtx]   (exits 0 with a message where there is no GPU;
// 2 for a bad flag, naming it)

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_graph.hpp"
#include "swp/device/cuda/pinned_buffer.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "train_kernels.hpp"

namespace {

using Ctx = swp::IterContext<int>;
using SteadyClock = std::chrono::steady_clock;

constexpr int batch = 8192, dim = 128, hidden = 1024, rows = 1 << 20;
constexpr int slots = 3;           // iterations in flight: the clock engine's depth (stages 0..2)
constexpr int staged = 8;          // distinct batches prepared in pinned memory
constexpr int dist_rounds = 2000;  // the input-dist stand-in's work per id
constexpr float lr = 1e-3f;
constexpr int tasks = 4;           // H2D, InputDist, Forward, Backward (their timers' index)

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(status));
}

template <class T>
T* device_array(std::size_t n) {
  void* p = nullptr;
  check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
  return static_cast<T*>(p);
}

cudaStream_t native(swp::TaskScope& scope) {
  swp::CudaStream* s = swp::as_cuda(scope.stream());
  if (s == nullptr) throw std::logic_error("gpu_train_step runs on the cuda backend only");
  return s->native_handle();
}

// The model and the per-slot activations, all on the GPU.
struct Model {
  float* table = device_array<float>(static_cast<std::size_t>(rows) * dim);
  float* w1 = device_array<float>(dim * hidden);
  float* w2 = device_array<float>(hidden);
  float* dw1 = device_array<float>(dim * hidden);
  float* dw2 = device_array<float>(hidden);
  struct Slot {
    int* ids_raw = device_array<int>(batch);
    int* ids = device_array<int>(batch);
    float* target = device_array<float>(batch);
    float* x = device_array<float>(batch * dim);
    float* h = device_array<float>(static_cast<std::size_t>(batch) * hidden);
    float* y = device_array<float>(batch);
    float* dy = device_array<float>(batch);
    float* dh = device_array<float>(static_cast<std::size_t>(batch) * hidden);
    float* loss = device_array<float>(1);
  };
  std::array<Slot, slots> slot;
  cublasHandle_t blas{};

  Model() {
    check(cublasCreate(&blas), "cublasCreate");
    // Deterministic small weights (the values matter little; the work does).
    std::vector<float> host(static_cast<std::size_t>(dim) * hidden);
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = 0.01f * static_cast<float>((i * 7919) % 13) - 0.06f;
    check(cudaMemcpy(w1, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "w1");
    check(cudaMemcpy(w2, host.data(), hidden * sizeof(float), cudaMemcpyHostToDevice), "w2");
    check(cudaMemset(table, 0, sizeof(float) * rows * dim), "table");
  }
};

// The batches, prepared once in page-locked memory (H2D copies them asynchronously).
struct Staging {
  std::array<swp::PinnedBuffer, staged> ids, target;
  Staging() {
    for (int k = 0; k < staged; ++k) {
      ids[k] = swp::PinnedBuffer(batch * sizeof(int));
      target[k] = swp::PinnedBuffer(batch * sizeof(float));
      auto id = ids[k].as<int>();
      auto t = target[k].as<float>();
      for (int i = 0; i < batch; ++i) {
        id[i] = (i * 104729 + k * 7) % rows;
        t[i] = static_cast<float>((i + k) % 5) * 0.1f;
      }
    }
  }
};

// CPU time the bodies spend (submitting their GPU work), per task and over all tasks.
struct Submission {
  std::array<std::atomic<long long>, tasks> ns{};
  std::array<std::atomic<long long>, tasks> count{};
  template <class F>
  void time(int task, F&& f) {
    const auto start = SteadyClock::now();
    f();
    ns[static_cast<std::size_t>(task)] +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - start).count();
    ++count[static_cast<std::size_t>(task)];
  }
  void reset() {
    for (int t = 0; t < tasks; ++t) {
      ns[static_cast<std::size_t>(t)] = 0;
      count[static_cast<std::size_t>(t)] = 0;
    }
  }
  double us_per_task(int task) const {
    const auto t = static_cast<std::size_t>(task);
    return count[t] == 0 ? 0.0 : static_cast<double>(ns[t].load()) / 1000.0 / count[t].load();
  }
  double us_per_task() const {
    long long total = 0, n = 0;
    for (int t = 0; t < tasks; ++t) {
      total += ns[static_cast<std::size_t>(t)].load();
      n += count[static_cast<std::size_t>(t)].load();
    }
    return n == 0 ? 0.0 : static_cast<double>(total) / 1000.0 / static_cast<double>(n);
  }
};

// Device time per task, from timing events around its work (one pair per task).
struct TaskTimer {
  std::array<cudaEvent_t, tasks> start{}, end{};
  bool on = false;
  TaskTimer() {
    for (int t = 0; t < tasks; ++t) {
      check(cudaEventCreate(&start[t]), "cudaEventCreate");
      check(cudaEventCreate(&end[t]), "cudaEventCreate");
    }
  }
  void begin(int t, cudaStream_t s) {
    if (on) check(cudaEventRecord(start[t], s), "record");
  }
  void finish(int t, cudaStream_t s) {
    if (on) check(cudaEventRecord(end[t], s), "record");
  }
  float ms(int t) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start[t], end[t]), "cudaEventElapsedTime");
    return ms;
  }
};

// Forward and Backward replayed from CUDA graphs, one per context slot and task (their pointers
// are the slot's), when `on`; eager launches otherwise.
struct Graphs {
  bool on = false;
  std::array<swp::CudaGraph, slots> forward, backward;
  template <class F>
  void run(std::array<swp::CudaGraph, slots>& graphs, int slot, swp::TaskScope& scope, F launch) {
    swp::CudaStream& stream = *swp::as_cuda(scope.stream());
    if (on) {
      graphs[static_cast<std::size_t>(slot)].run(stream, launch);
    } else {
      launch(stream.native_handle());
    }
  }
};

swp::Plan<Ctx> make_plan(Model& m, Staging& staging, Submission& sub, TaskTimer& timer,
                         Graphs& graphs) {
  swp::Plan<Ctx> plan;
  plan.add("H2D",
           [&](Ctx& ctx, swp::TaskScope& scope) {
             sub.time(0, [&] {
               const cudaStream_t s = native(scope);
               auto& slot = m.slot[ctx.iter_idx % slots];
               const int k = ctx.batch % staged;
               timer.begin(0, s);
               check(cudaMemcpyAsync(slot.ids_raw, staging.ids[k].data(), batch * sizeof(int),
                                     cudaMemcpyHostToDevice, s),
                     "H2D ids");
               check(cudaMemcpyAsync(slot.target, staging.target[k].data(), batch * sizeof(float),
                                     cudaMemcpyHostToDevice, s),
                     "H2D target");
               timer.finish(0, s);
             });
           },
           {.stage = 0, .stream = "h2d", .thread_group = "h2d"});
  plan.add("InputDist",
           [&](Ctx& ctx, swp::TaskScope& scope) {
             sub.time(1, [&] {
               const cudaStream_t s = native(scope);
               auto& slot = m.slot[ctx.iter_idx % slots];
               timer.begin(1, s);
               train::input_dist(slot.ids_raw, slot.ids, batch, rows, dist_rounds, s);
               timer.finish(1, s);
             });
           },
           {.stage = 1, .stream = "input_dist", .thread_group = "dist"});
  plan.add("Forward",
           [&](Ctx& ctx, swp::TaskScope& scope) {
             sub.time(2, [&] {
               const cudaStream_t stream = native(scope);
               const int k = static_cast<int>(ctx.iter_idx % slots);
               auto& slot = m.slot[static_cast<std::size_t>(k)];
               timer.begin(2, stream);
               graphs.run(graphs.forward, k, scope, [&](cudaStream_t s) {
                 const float one = 1.f, zero = 0.f;
                 check(cublasSetStream(m.blas, s), "cublasSetStream");
                 train::gather(m.table, slot.ids, slot.x, batch, dim, s);
                 // Row-major H = X W1, Y = H W2, as column-major products of the transposes.
                 check(cublasSgemm(m.blas, CUBLAS_OP_N, CUBLAS_OP_N, hidden, batch, dim, &one, m.w1,
                                   hidden, slot.x, dim, &zero, slot.h, hidden),
                       "H = X W1");
                 train::relu(slot.h, batch * hidden, s);
                 check(cublasSgemm(m.blas, CUBLAS_OP_N, CUBLAS_OP_N, 1, batch, hidden, &one, m.w2,
                                   1, slot.h, hidden, &zero, slot.y, 1),
                       "Y = H W2");
                 check(cudaMemsetAsync(slot.loss, 0, sizeof(float), s), "loss = 0");
                 train::mse(slot.y, slot.target, slot.dy, slot.loss, batch, s);
               });
               timer.finish(2, stream);
             });
           },
           {.stage = 2, .stream = "compute", .thread_group = "compute"});
  plan.add("Backward",
           [&](Ctx& ctx, swp::TaskScope& scope) {
             sub.time(3, [&] {
               const cudaStream_t stream = native(scope);
               const int k = static_cast<int>(ctx.iter_idx % slots);
               auto& slot = m.slot[static_cast<std::size_t>(k)];
               timer.begin(3, stream);
               graphs.run(graphs.backward, k, scope, [&](cudaStream_t s) {
                 const float one = 1.f, zero = 0.f, step = -lr;
                 check(cublasSetStream(m.blas, s), "cublasSetStream");
                 check(cublasSgemm(m.blas, CUBLAS_OP_N, CUBLAS_OP_T, 1, hidden, batch, &one,
                                   slot.dy, 1, slot.h, hidden, &zero, m.dw2, 1),
                       "dW2 = H^T dY");
                 check(cublasSgemm(m.blas, CUBLAS_OP_T, CUBLAS_OP_N, hidden, batch, 1, &one, m.w2,
                                   1, slot.dy, 1, &zero, slot.dh, hidden),
                       "dH = dY W2^T");
                 train::relu_backward(slot.h, slot.dh, batch * hidden, s);
                 check(cublasSgemm(m.blas, CUBLAS_OP_N, CUBLAS_OP_T, hidden, dim, batch, &one,
                                   slot.dh, hidden, slot.x, dim, &zero, m.dw1, hidden),
                       "dW1 = X^T dH");
                 check(cublasSaxpy(m.blas, dim * hidden, &step, m.dw1, 1, m.w1, 1), "W1 -= lr dW1");
                 check(cublasSaxpy(m.blas, hidden, &step, m.dw2, 1, m.w2, 1), "W2 -= lr dW2");
               });
               timer.finish(3, stream);
             });
           },
           {.stage = 2, .stream = "compute", .thread_group = "compute"});
  plan.intra_iter_deps = {{"InputDist", "H2D"}, {"Forward", "InputDist"}, {"Backward", "Forward"}};
  plan.inter_iter_deps = {{"Forward", "Backward"}};
  return plan;
}

template <class Pipe>
double us_per_iter(Pipe& pipe, int iters, bool serial) {
  std::vector<int> batches(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) batches[static_cast<std::size_t>(i)] = i;
  const auto stats = serial ? pipe.run_serial(batches) : pipe.run(batches);
  return std::chrono::duration<double, std::micro>(stats.elapsed).count() / iters;
}

// How long GPU completion takes to reach the CPU side on `device`: the median over `rounds` of
// the time from queuing a 1 µs kernel and a record to the CPU seeing the generation reached
// (the caller spins on Event::reached, so only the completion path is timed, not a wake-up).
double completion_latency_us(swp::CudaDevice& device, int rounds) {
  auto stream = device.make_stream("latency", 0);
  auto event = device.make_event();
  std::vector<double> us;
  for (int i = 0; i < rounds; ++i) {
    const auto start = std::chrono::steady_clock::now();
    stream->enqueue_work(std::chrono::microseconds(1));
    const auto generation = stream->record(*event);
    while (!event->reached(generation)) {
    }
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  stream->synchronize();
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

void metric(const char* name, double value, const char* unit) {
  std::printf("metric %s %.3f %s\n", name, value, unit);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A training step on the GPU as a SparseDist plan, run by both engines against "
               "the serial loop (docs/gpu.md).",
               "gpu_train_step"};
  int iters = 200;
  bool nvtx = false;
  app.add_option("--iters", iters, "timed iterations of each run")
      ->check(examples::integer_in(1, 1'000'000));
  app.add_flag("--nvtx", nvtx, "an NVTX range for every task instance (for Nsight Systems)");
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
  if (swp::CudaDevice::count() == 0) {
    std::printf("gpu_train_step: no CUDA device on this machine; nothing to run\n");
    return 0;
  }
  Model model;
  Staging staging;
  Submission submission;
  TaskTimer timer;
  Graphs graphs;
  swp::Runtime rt(swp::make_device("cuda"), {.workers = 3});
  const swp::Plan<Ctx> plan = make_plan(model, staging, submission, timer, graphs);
  swp::DataFlowPipeline<Ctx> dataflow(rt, plan, slots);
  swp::ClockPipeline<Ctx> clock(rt, plan);
  // Each task instance of both engines as an NVTX range SWP/{task}/iter{N} (serial
  // iterations: SWP_serial/...), for Nsight Systems: `nsys profile gpu_train_step --nvtx`.
  if (nvtx && !(dataflow.enable_nvtx() && clock.enable_nvtx()))
    std::printf("gpu_train_step: --nvtx: this build of swp has no NVTX; running without\n");

  // Warm-up first (cuBLAS picks its kernels, the GPU leaves its idle clocks): a bound timed
  // on a cold GPU came out 30% high on an H100.
  us_per_iter(dataflow, 50, false);
  // Per-task device times: serial iterations, one at a time, timed with CUDA events.
  timer.on = true;
  std::array<double, tasks> task_us{};
  constexpr int calibration = 50;
  for (int i = 0; i < calibration + 3; ++i) {
    dataflow.run_one_serial_iter(i, i);
    dataflow.synchronize();
    if (i < 3) continue;
    for (int t = 0; t < tasks; ++t)
      task_us[static_cast<std::size_t>(t)] += 1000.0 * timer.ms(t) / calibration;
  }
  timer.on = false;
  // The busiest stream: compute runs Forward and Backward, the others one task each.
  const double bound = std::max({task_us[0], task_us[1], task_us[2] + task_us[3]});

  const double serial = us_per_iter(dataflow, iters, true);
  submission.reset();
  const double df = us_per_iter(dataflow, iters, false);
  const double submit_us = submission.us_per_task();
  std::array<double, tasks> submit_task_us{};
  for (int t = 0; t < tasks; ++t)
    submit_task_us[static_cast<std::size_t>(t)] = submission.us_per_task(t);
  const double ck = us_per_iter(clock, iters, false);
  // The same with Forward and Backward replayed from CUDA graphs (captured after 2 eager runs
  // per slot, in the warm-up).
  graphs.on = true;
  us_per_iter(dataflow, 20, false);
  submission.reset();
  const double graph_df = us_per_iter(dataflow, iters, false);
  const double graph_submit_us = submission.us_per_task();
  graphs.on = false;

  // The same plan on a device of each completion mode, named (swp::CudaCompletion), and each
  // mode's completion latency.
  struct ModeRun {
    double us_per_iter = 0, submit_us = 0, latency_us = 0;
  };
  auto run_mode = [&](swp::CudaCompletion mode) {
    auto owned = std::make_unique<swp::CudaDevice>(0, mode);
    swp::CudaDevice& device = *owned;
    swp::Runtime mode_rt(std::move(owned), {.workers = 3});
    swp::DataFlowPipeline<Ctx> pipe(mode_rt, plan, slots);
    us_per_iter(pipe, 20, false);
    submission.reset();
    ModeRun r;
    r.us_per_iter = us_per_iter(pipe, iters, false);
    r.submit_us = submission.us_per_task();
    r.latency_us = completion_latency_us(device, 200);
    return r;
  };
  const ModeRun polling = run_mode(swp::CudaCompletion::polling);
  const ModeRun host_function = run_mode(swp::CudaCompletion::host_function);

  float loss = 0;
  check(
      cudaMemcpy(&loss, model.slot[(iters - 1) % slots].loss, sizeof loss, cudaMemcpyDeviceToHost),
      "loss");
  if (!std::isfinite(loss)) throw std::runtime_error("the loss is not finite");

  std::printf(
      "gpu_train_step: %s (%s completion by default), batch %d, dim %d, hidden %d, %d "
      "iterations\n",
      rt.device().backend().data(),
      dynamic_cast<swp::CudaDevice&>(rt.device()).completion() == swp::CudaCompletion::polling
          ? "polling"
          : "host_function",
      batch, dim, hidden, iters);
  for (int t = 0; t < tasks; ++t)
    std::printf("  task %d device time %.1f us, cpu submit %.1f us\n", t,
                task_us[static_cast<std::size_t>(t)], submit_task_us[static_cast<std::size_t>(t)]);
  metric("gpu_serial_us_per_iter", serial, "us");
  metric("gpu_dataflow_us_per_iter", df, "us");
  metric("gpu_clock_us_per_iter", ck, "us");
  metric("gpu_bound_us_per_iter", bound, "us");
  metric("gpu_dataflow_efficiency", bound / df, "ratio");
  metric("gpu_clock_efficiency", bound / ck, "ratio");
  metric("gpu_cpu_submit_us_per_task", submit_us, "us");
  metric("gpu_graph_dataflow_us_per_iter", graph_df, "us");
  metric("gpu_graph_dataflow_efficiency", bound / graph_df, "ratio");
  metric("gpu_graph_cpu_submit_us_per_task", graph_submit_us, "us");
  metric("gpu_polling_dataflow_us_per_iter", polling.us_per_iter, "us");
  metric("gpu_polling_dataflow_efficiency", bound / polling.us_per_iter, "ratio");
  metric("gpu_polling_cpu_submit_us_per_task", polling.submit_us, "us");
  metric("gpu_host_function_dataflow_us_per_iter", host_function.us_per_iter, "us");
  metric("gpu_host_function_dataflow_efficiency", bound / host_function.us_per_iter, "ratio");
  metric("gpu_host_function_cpu_submit_us_per_task", host_function.submit_us, "us");
  metric("gpu_completion_latency_us_host_function", host_function.latency_us, "us");
  metric("gpu_completion_latency_us_polling", polling.latency_us, "us");
  metric("gpu_final_loss", loss, "value");
  return 0;
}
