// The cuda backend on a real GPU. Compiled where SWP_HAVE_CUDA; each test says why it skips
// where the machine has no usable GPU (CI), on stderr, and passes without checking anything.

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "swp/device/backends.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_graph.hpp"
#include "swp/device/cuda/pinned_buffer.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/errors.hpp"
#include "swp/presets/preset_registry.hpp"
#include "swp/presets/preset_runner.hpp"
#include "swp/presets/recsys_costs.hpp"

namespace test_cuda_device {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

// True where a GPU is usable; else says so on stderr, naming the test, which then returns.
bool have_gpu(const char* test) {
  if (swp::CudaDevice::count() > 0) return true;
  std::fprintf(stderr, "[skip] cuda test '%s': no CUDA device on this machine\n", test);
  return false;
}

constexpr swp::CudaCompletion completion_modes[] = {swp::CudaCompletion::polling,
                                                    swp::CudaCompletion::host_function};
const char* mode_name(swp::CudaCompletion mode) {
  return mode == swp::CudaCompletion::polling ? "polling" : "host_function";
}

// Either engine on `plan` (the data-flow one with 3 iterations in flight).
template <class Pipe>
std::unique_ptr<Pipe> make_pipe(swp::Runtime& rt, const swp::Plan<Ctx>& plan) {
  if constexpr (std::is_same_v<Pipe, swp::ClockPipeline<Ctx>>) {
    return std::make_unique<Pipe>(rt, plan);
  } else {
    return std::make_unique<Pipe>(rt, plan, 3);
  }
}

}  // namespace

TEST_CASE("cuda: the device makes prioritized streams and events with CUDA handles") {
  if (!have_gpu("streams and events")) return;
  swp::CudaDevice device(0);
  CHECK(device.backend() == "cuda");
  CHECK(device.completion() == swp::CudaCompletion::polling);  // the default (docs/gpu.md)
  const auto [least, greatest] = device.priority_range();
  CHECK(greatest <= least);
  auto high = device.make_stream("high", greatest);
  auto clamped = device.make_stream("clamped", least + 100);
  CHECK(high->native_handle() != nullptr);
  CHECK(high->priority() == greatest);
  CHECK(clamped->priority() == least);
  auto event = device.make_event();
  REQUIRE(event->native() != nullptr);
  CHECK(&event->native()->owner() == &device);
  std::unique_ptr<swp::Stream> plain = device.make_stream("plain");
  CHECK(swp::as_cuda(*plain) != nullptr);
}

TEST_CASE("cuda: a recorded generation completes on the CPU side once the GPU got there") {
  if (!have_gpu("record")) return;
  for (const auto mode : completion_modes) {
    CAPTURE(mode_name(mode));
    swp::CudaDevice device(0, mode);
    auto stream = device.make_stream("s", 0);
    swp::Event event;  // a plain event: its CUDA events come with its first record
    stream->enqueue_work(5ms);
    const auto generation = stream->record(event);
    CHECK(event.native() != nullptr);
    // Without anyone synchronizing: the host function or the poller completes it.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!event.reached(generation) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(100us);
    CHECK(event.reached(generation));
    stream->synchronize();
    CHECK(event.query());
  }
}

TEST_CASE("cuda: a declared cross-stream dependency is ordered by events, on the GPU") {
  if (!have_gpu("cross-stream wait")) return;
  swp::CudaDevice device(0);
  auto producer = device.make_stream("producer", 0);
  auto consumer = device.make_stream("consumer", 0);
  auto event = device.make_event();
  constexpr int rounds = 50;
  std::vector<int> produced(rounds, 0), seen(rounds, -1);
  for (int i = 0; i < rounds; ++i) {
    const auto k = static_cast<std::size_t>(i);
    // The producer's value is written after 200 µs of GPU time; the consumer's stream waits
    // for the producer's event, so its host function runs after the write, every round.
    producer->enqueue_work(200us);
    producer->enqueue([&produced, k, i] { produced[k] = i + 1; });
    consumer->wait(*event, producer->record(*event));
    consumer->enqueue([&produced, &seen, k] { seen[k] = produced[k]; });
  }
  consumer->synchronize();
  producer->synchronize();
  for (int i = 0; i < rounds; ++i) CHECK(seen[static_cast<std::size_t>(i)] == i + 1);
}

TEST_CASE("cuda: a callable's exception is rethrown once by synchronize, the stream goes on") {
  if (!have_gpu("callable error")) return;
  swp::CudaDevice device(0);
  auto stream = device.make_stream("s", 0);
  bool after = false;
  stream->enqueue([] { throw std::runtime_error("decode failed"); });
  stream->enqueue([&after] { after = true; });
  CHECK_THROWS_WITH_AS(stream->synchronize(), "decode failed", std::runtime_error);
  CHECK(after);
  CHECK_NOTHROW(stream->synchronize());
}

TEST_CASE("cuda: pinned host buffers are page-locked, owned and movable") {
  if (!have_gpu("pinned buffer")) return;
  swp::PinnedBuffer buffer(1 << 20);
  REQUIRE(buffer.data() != nullptr);
  CHECK(buffer.as<float>().size() == (1u << 20) / sizeof(float));
  swp::PinnedBuffer moved(std::move(buffer));
  CHECK(buffer.data() == nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  CHECK(moved.size() == 1u << 20);
}

TEST_CASE_TEMPLATE("cuda: both engines run a two-stream plan on the cuda backend", Pipe,
                   swp::DataFlowPipeline<Ctx>, swp::ClockPipeline<Ctx>) {
  if (!have_gpu("engines")) return;
  swp::Runtime rt(swp::make_device("cuda"), {.workers = 2});
  CHECK(rt.backend() == swp::Backend::cuda);
  constexpr int iterations = 32;
  std::vector<int> produced(iterations, 0), consumed(iterations, -1);
  swp::Plan<Ctx> plan;
  plan.add("Produce",
           [&produced](Ctx& ctx, swp::TaskScope& scope) {
             const auto i = static_cast<std::size_t>(ctx.iter_idx);
             const int batch = ctx.batch;
             scope.stream().enqueue_work(100us);
             scope.enqueue([&produced, i, batch] { produced[i] = 2 * batch; });
           },
           {.stage = 0, .stream = "gpu"});
  plan.add("Consume",
           [&produced, &consumed](Ctx& ctx, swp::TaskScope& scope) {
             const auto i = static_cast<std::size_t>(ctx.iter_idx);
             scope.enqueue([&produced, &consumed, i] { consumed[i] = produced[i] + 1; });
           },
           {.stage = 1, .stream = "copy"});
  plan.intra_iter_deps.push_back({"Consume", "Produce"});
  auto pipe = make_pipe<Pipe>(rt, plan);
  std::vector<int> batches;
  for (int i = 0; i < iterations; ++i) batches.push_back(i);
  CHECK(pipe->run(batches).iterations == iterations);
  for (int i = 0; i < iterations; ++i) CHECK(consumed[static_cast<std::size_t>(i)] == 2 * i + 1);
}

TEST_CASE("cuda: reading an undeclared producer is an error on the cuda backend too") {
  if (!have_gpu("undeclared read")) return;
  swp::Runtime rt(swp::make_device("cuda"), {.workers = 1});
  using TypedCtx = swp::IterContext<int>;
  swp::Plan<TypedCtx> plan;
  auto load = plan.add("Load", [](TypedCtx& ctx) -> swp::Co<int> { co_return ctx.batch; },
                       {.stage = 0, .stream = "h2d"});
  plan.add("Peek", [load](TypedCtx& ctx) -> swp::Co<void> { (void)co_await ctx.get(load); },
           {.stage = 1, .stream = "compute"});
  swp::DataFlowPipeline<TypedCtx> pipe(rt, plan, 2);
  pipe.fill_pipeline(std::vector<int>{1});
  try {
    (void)pipe.progress();
    FAIL("no error");
  } catch (const swp::TaskError& e) {
    CHECK(e.task() == "Peek");
    CHECK_THROWS_AS(std::rethrow_exception(e.nested()), swp::UndeclaredDependency);
  }
}

TEST_CASE("cuda: a graph runs eagerly for its warm-up, is captured once, then replayed") {
  if (!have_gpu("graph")) return;
  swp::CudaDevice device(0);
  auto stream = device.make_stream("graph", 0);
  int* source = nullptr;
  int* copy = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&source), sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&copy), sizeof(int)) == cudaSuccess);
  swp::CudaGraph graph(2);
  int launches = 0;
  // The captured work copies `source` to `copy`: the same pointers every run, new contents.
  auto launch = [&](CUstream_st* s) {
    ++launches;
    REQUIRE(cudaMemcpyAsync(copy, source, sizeof(int), cudaMemcpyDeviceToDevice, s) == cudaSuccess);
  };
  for (int run = 0; run < 6; ++run) {
    CAPTURE(run);
    REQUIRE(cudaMemcpyAsync(source, &run, sizeof(int), cudaMemcpyHostToDevice,
                            stream->native_handle()) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(stream->native_handle()) == cudaSuccess);
    graph.run(*stream, launch);
    int seen = -1;
    REQUIRE(cudaMemcpyAsync(&seen, copy, sizeof(int), cudaMemcpyDeviceToHost,
                            stream->native_handle()) == cudaSuccess);
    stream->synchronize();
    CHECK(seen == run);
    CHECK(graph.captured() == (run >= 2));
  }
  CHECK(launches == 3);  // 2 eager runs, 1 capture; the rest replayed
  CHECK(graph.replays() == 4);
  cudaFree(source);
  cudaFree(copy);
}

TEST_CASE("cuda: pt2's compile step replays the synthetic device work from CUDA graphs") {
  if (!have_gpu("pt2 graph replay")) return;
  auto owned = std::make_unique<swp::CudaDevice>(0);
  swp::CudaDevice& gpu = *owned;
  swp::Runtime rt(std::move(owned), {.workers = 2});
  // Every stream the preset's device work may go to: those its tasks name, and "default".
  const auto replays = [&rt](const swp::PipelinePlan& plan) {
    std::set<std::string> names{"default"};
    for (const auto& task : plan.tasks)
      if (!task.schedule.stream.empty()) names.insert(task.schedule.stream);
    std::uint64_t n = 0;
    for (const auto& name : names)
      if (swp::CudaStream* s = swp::as_cuda(rt.stream(name))) n += s->graph_replays();
    return n;
  };
  std::uint64_t replays_before_compile = ~std::uint64_t{0};
  swp::presets::Preset preset;
  preset = swp::presets::make_preset("pt2", {.compile_on_iter = 3, .compile = [&] {
                                               replays_before_compile =
                                                   replays(preset.phases.back().plan);
                                               gpu.replay_work_from_graphs(true);
                                             }});
  for (auto& phase : preset.phases) swp::presets::apply_recsys_costs(phase.plan);
  using SyntheticCtx = swp::IterContext<std::int64_t>;
  swp::presets::PresetRunner runner(preset, [&rt](const swp::PipelinePlan& plan) {
    return std::make_unique<swp::DataFlowPipeline<SyntheticCtx>>(rt, plan, 1);
  });
  std::int64_t next = 0;
  CHECK(runner.run([&next]() -> std::optional<std::int64_t> {
    if (next >= 10) return std::nullopt;
    return next++;
  }) == 10);
  CHECK(replays_before_compile == 0);  // the eager iterations launched their kernels
  CHECK(replays(preset.phases.back().plan) > 0);
  CHECK(gpu.replays_work_from_graphs());
}

TEST_CASE("cuda: polling completion — records complete in order, callables keep their GPU order") {
  if (!have_gpu("polling completion")) return;
  swp::CudaDevice device(0, swp::CudaCompletion::polling);
  CHECK(device.completion() == swp::CudaCompletion::polling);
  auto producer = device.make_stream("producer", 0);
  auto consumer = device.make_stream("consumer", 0);
  auto event = device.make_event();
  constexpr int rounds = 50;
  std::vector<int> produced(rounds, 0), seen(rounds, -1);
  std::vector<std::uint64_t> generations;
  for (int i = 0; i < rounds; ++i) {
    const auto k = static_cast<std::size_t>(i);
    producer->enqueue_work(100us);
    producer->enqueue([&produced, k, i] { produced[k] = i + 1; });
    generations.push_back(producer->record(*event));
    consumer->wait(*event, generations.back());
    consumer->enqueue([&produced, &seen, k] { seen[k] = produced[k]; });
  }
  // The CPU side learns of the last record without anyone synchronizing: the poller sees it.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!event->reached(generations.back()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100us);
  CHECK(event->reached(generations.back()));
  consumer->synchronize();
  producer->synchronize();
  for (int i = 0; i < rounds; ++i) CHECK(seen[static_cast<std::size_t>(i)] == i + 1);
}

TEST_CASE_TEMPLATE("cuda: both engines run on a device of either completion mode", Pipe,
                   swp::DataFlowPipeline<Ctx>, swp::ClockPipeline<Ctx>) {
  if (!have_gpu("engines, completion modes")) return;
  for (const auto mode : completion_modes) {
    CAPTURE(mode_name(mode));
    swp::Runtime rt(std::make_unique<swp::CudaDevice>(0, mode), {.workers = 2});
    constexpr int iterations = 32;
    std::vector<int> consumed(iterations, -1);
    swp::Plan<Ctx> plan;
    plan.add("Produce", [](Ctx&, swp::TaskScope& scope) { scope.stream().enqueue_work(100us); },
             {.stage = 0, .stream = "gpu"});
    plan.add("Consume",
             [&consumed](Ctx& ctx, swp::TaskScope& scope) {
               const auto i = static_cast<std::size_t>(ctx.iter_idx);
               const int batch = ctx.batch;
               scope.enqueue([&consumed, i, batch] { consumed[i] = batch; });
             },
             {.stage = 1, .stream = "copy"});
    plan.intra_iter_deps.push_back({"Consume", "Produce"});
    auto pipe = make_pipe<Pipe>(rt, plan);
    pipe->retire_after_device();  // retirement waits for the GPU completions
    std::vector<int> batches;
    for (int i = 0; i < iterations; ++i) batches.push_back(i);
    CHECK(pipe->run(batches).iterations == iterations);
    for (int i = 0; i < iterations; ++i) CHECK(consumed[static_cast<std::size_t>(i)] == i);
  }
}

}  // namespace test_cuda_device
