// Seed 004's input distribution across MPI ranks (run by mpirun with 2 and 4 ranks, every rank
// runs every case in the same order): the splits fused into one collective per process group,
// results equal to the unfused exchange and to a serial computation, the SparseDist preset's
// tasks bound to it on both engines, and a failure on one rank reaching every rank.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/comm/input_dist.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/presets/preset_registry.hpp"
#include "swp/presets/task_bindings.hpp"

namespace test_mpi_input_dist {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

// Forwards to `inner`, counting the collectives called by operation.
class Counting final : public swp::Communicator {
 public:
  explicit Counting(swp::Communicator& inner) : inner_(inner) {}
  std::map<std::string, int> calls;

  int rank() const noexcept override { return inner_.rank(); }
  int size() const noexcept override { return inner_.size(); }
  std::string_view backend() const noexcept override { return inner_.backend(); }
  std::unique_ptr<swp::Communicator> split(std::span<const int> ranks) override {
    return inner_.split(ranks);
  }

 protected:
  swp::Future<void> do_all_reduce(swp::Stream& s, const void* send, void* recv, std::size_t n,
                                  swp::DataType t, swp::ReduceOp op, std::string_view w) override {
    ++calls["all_reduce"];
    return inner_.all_reduce(s, send, recv, n, t, op, w);
  }
  swp::Future<void> do_all_gather(swp::Stream& s, const void* send, void* recv, std::size_t n,
                                  swp::DataType t, std::string_view w) override {
    ++calls["all_gather"];
    return inner_.all_gather(s, send, recv, n, t, w);
  }
  swp::Future<void> do_all_to_all(swp::Stream& s, const void* send, void* recv, std::size_t n,
                                  swp::DataType t, std::string_view w) override {
    ++calls["all_to_all"];
    return inner_.all_to_all(s, send, recv, n, t, w);
  }
  swp::Future<void> do_all_to_all_v(swp::Stream& s, const void* send,
                                    std::span<const std::size_t> sc, void* recv,
                                    std::span<const std::size_t> rc, swp::DataType t,
                                    std::string_view w) override {
    ++calls["all_to_all_v"];
    return inner_.all_to_all_v(s, send, sc, recv, rc, t, w);
  }
  swp::Future<void> do_all_to_all_v_later(swp::Stream& s,
                                          std::function<swp::AllToAllVBuffers()> when_started,
                                          swp::DataType t, std::string_view w) override {
    ++calls["all_to_all_v"];
    return inner_.all_to_all_v(s, std::move(when_started), t, w);
  }
  swp::Future<void> do_send(swp::Stream& s, const void* d, std::size_t n, swp::DataType t, int p,
                            std::string_view w) override {
    return inner_.send(s, d, n, t, p, w);
  }
  swp::Future<void> do_recv(swp::Stream& s, void* d, std::size_t n, swp::DataType t, int p,
                            std::string_view w) override {
    return inner_.recv(s, d, n, t, p, w);
  }

 private:
  swp::Communicator& inner_;
};

// The ids rank `from` sends rank `to` (ranks of the module's group) for module `m` of
// iteration `it`: between 0 and 3 of them, each naming all four.
std::vector<std::int64_t> ids_for(int from, int to, int m, std::int64_t it) {
  const auto n = static_cast<int>((from + 2 * to + m + it) % 4);
  std::vector<std::int64_t> v;
  for (int k = 0; k < n; ++k) v.push_back(it * 1'000'000 + from * 10'000 + to * 100 + m * 10 + k);
  return v;
}

swp::ModuleInput input_for(const swp::Communicator& group, int m, std::int64_t it) {
  swp::ModuleInput in;
  for (int to = 0; to < group.size(); ++to) in.to_rank.push_back(ids_for(group.rank(), to, m, it));
  return in;
}

// What this rank must receive: every rank's ids for it, in rank order.
std::vector<std::int64_t> expected(const swp::Communicator& group, int m, std::int64_t it) {
  std::vector<std::int64_t> v;
  for (int from = 0; from < group.size(); ++from) {
    const auto part = ids_for(from, group.rank(), m, it);
    v.insert(v.end(), part.begin(), part.end());
  }
  return v;
}

// The even or the odd ranks: a process group that every rank is in one of.
std::unique_ptr<swp::Communicator> parity_group(swp::Communicator& world) {
  std::vector<int> ranks;
  for (int r = world.rank() % 2; r < world.size(); r += 2) ranks.push_back(r);
  return world.split(ranks);
}

}  // namespace

TEST_CASE("mpi: input dist sends one splits collective per process group, as unfused would") {
  auto world = swp::MpiCommunicator::world();
  world->set_order_check(true);
  auto parity = parity_group(*world);
  swp::Runtime rt;
  swp::Stream& data_dist = rt.stream("data_dist");
  swp::Stream& main_stream = rt.stream("default");
  for (const bool fuse : {true, false}) {
    CAPTURE(fuse);
    Counting on_world(*world), on_parity(*parity);
    swp::InputDist dist({.fuse_splits = fuse});
    dist.add_module("ebc", on_world).add_module("mc", on_parity).add_module("ec", on_world);
    constexpr int iterations = 4;
    for (std::int64_t it = 0; it < iterations; ++it) {
      auto batch = dist.start(data_dist,
                              {{"ebc", input_for(*world, 0, it)},
                               {"mc", input_for(*parity, 1, it)},
                               {"ec", input_for(*world, 2, it)}},
                              "iter " + std::to_string(it));
      data_dist.synchronize();
      for (const auto& f : batch.splits()) f.get();  // wait #1
      main_stream.synchronize();
      batch.tensors("ebc").get();  // wait #2
      CHECK(batch.take("ebc").values == expected(*world, 0, it));
      CHECK(batch.take("mc").values == expected(*parity, 1, it));
      const swp::ModuleOutput ec = batch.take("ec");
      CHECK(ec.values == expected(*world, 2, it));
      for (int from = 0; from < world->size(); ++from) {
        const auto part = ids_for(from, world->rank(), 2, it);
        CHECK(std::vector<std::int64_t>(ec.from(from).begin(), ec.from(from).end()) == part);
      }
    }
    // Fused: one splits all_to_all per group (world: ebc + ec; parity: mc); unfused: per module.
    CHECK(on_world.calls["all_to_all"] == iterations * (fuse ? 1 : 2));
    CHECK(on_parity.calls["all_to_all"] == iterations * 1);
    CHECK(on_world.calls["all_to_all_v"] == iterations * 2);
    CHECK(on_parity.calls["all_to_all_v"] == iterations * 1);
  }
}

namespace {

using Ctx = swp::IterContext<int>;

// The SparseDist preset with its input distribution on an InputDist: InputDistStart (globally
// ordered, data_dist) starts both levels, InputDistWait waits for the splits (wait #1), Forward
// for its modules' ids on the default stream (wait #2) and sums them.
struct SparseDistRun {
  swp::InputDist dist;
  swp::Communicator& world;
  swp::Communicator& parity;
  std::mutex mutex;
  std::map<std::int64_t, swp::InputDist::Batch> batches;
  std::map<std::int64_t, std::int64_t> sums;

  swp::InputDist::Batch& batch(std::int64_t it) {
    std::lock_guard lock(mutex);
    return batches[it];
  }

  swp::presets::BasicPreset<swp::Plan<Ctx>> preset() {
    swp::presets::TaskBindings<swp::Plan<Ctx>> tasks;
    for (const char* idle : {"H2D", "ZeroGrad", "WaitBatch", "Backward", "OptimizerStep"})
      tasks.bind(idle, [](Ctx&, swp::TaskScope&) {});
    tasks.bind("InputDistStart", [this](Ctx& ctx, swp::TaskScope& scope) {
      const std::int64_t it = ctx.iter_idx;
      batch(it) = dist.start(scope.stream(),
                             {{"ebc", input_for(world, 0, it)}, {"mc", input_for(parity, 1, it)}},
                             "InputDistStart iter " + std::to_string(it));
    });
    tasks.bind("InputDistWait", [this](Ctx& ctx, swp::TaskScope&) -> swp::Co<void> {
      for (const auto& f : batch(ctx.iter_idx).splits()) co_await f;
    });
    tasks.bind("Forward", [this](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
      auto& b = batch(ctx.iter_idx);
      std::int64_t sum = 0;
      for (const char* module : {"ebc", "mc"}) {
        co_await b.tensors(module).on(scope.stream());
        for (std::int64_t id : b.take(module).values) sum += id;
      }
      std::lock_guard lock(mutex);
      sums[ctx.iter_idx] = sum;
    });
    return swp::presets::make_preset("sparse_dist", tasks);
  }
};

template <class Pipe>
std::unique_ptr<Pipe> make_pipe(swp::Runtime& rt, const swp::Plan<Ctx>& plan) {
  if constexpr (std::is_same_v<Pipe, swp::ClockPipeline<Ctx>>) {
    return std::make_unique<Pipe>(rt, plan);
  } else {
    return std::make_unique<Pipe>(rt, plan, 3);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("mpi: the SparseDist preset's tasks run the input dist on both engines", Pipe,
                   swp::DataFlowPipeline<Ctx>, swp::ClockPipeline<Ctx>) {
  auto world = swp::MpiCommunicator::world();
  world->set_order_check(true);
  world->set_timeout(60s);
  auto parity = parity_group(*world);
  SparseDistRun run{{}, *world, *parity, {}, {}, {}};
  run.dist.add_module("ebc", *world).add_module("mc", *parity);
  const auto preset = run.preset();
  swp::Runtime rt({.workers = 2, .dedicated_lanes = preset.dedicated_lanes});
  auto pipe = make_pipe<Pipe>(rt, preset.plan());
  constexpr int iterations = 8;
  std::vector<int> batches(iterations);
  CHECK(pipe->run(batches).iterations == iterations);
  REQUIRE(run.sums.size() == static_cast<std::size_t>(iterations));
  for (std::int64_t it = 0; it < iterations; ++it) {
    std::int64_t sum = 0;
    for (std::int64_t id : expected(*world, 0, it)) sum += id;
    for (std::int64_t id : expected(*parity, 1, it)) sum += id;
    CAPTURE(it);
    CHECK(run.sums[it] == sum);
  }
}

TEST_CASE("mpi: a task failing on one rank fails the run on every rank, naming rank and task") {
  // Before the communicator: MPI may write `out` until the communicator is gone.
  std::vector<std::int64_t> in(4), out(4);
  auto world = swp::MpiCommunicator::world();
  auto control = swp::MpiCommunicator::world();
  world->set_timeout(2s);
  const int me = world->rank();
  if (world->size() < 2) return;
  constexpr int failing_rank = 1;
  constexpr std::int64_t failing_iter = 2;
  swp::Plan<Ctx> plan;
  plan.add("Backward",
           [&](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
             const auto i = static_cast<std::size_t>(ctx.iter_idx);
             if (me == failing_rank && ctx.iter_idx == failing_iter)
               throw std::runtime_error("planted failure on rank 1");
             in[i] = me + 1;
             co_await world->all_reduce(scope.stream(), std::span<const std::int64_t>(&in[i], 1),
                                        std::span<std::int64_t>(&out[i], 1), swp::ReduceOp::sum,
                                        "Backward iter " + std::to_string(ctx.iter_idx));
           },
           {.stage = 0, .stream = "comm", .globally_ordered = true});
  swp::Runtime rt({.workers = 2});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);  // one in flight: the failed one is the last
  std::vector<int> batches(4);
  try {
    pipe.run(batches);
    FAIL("rank " << me << " did not see the failure");
  } catch (const swp::TaskError& e) {
    CHECK(e.task() == "Backward");
    CHECK(e.iter() == failing_iter);
    try {
      std::rethrow_exception(e.nested());
    } catch (const swp::CommTimeout& timeout) {
      // Every other rank: its collective's deadline names this rank and the task.
      CHECK(me != failing_rank);
      CHECK(timeout.rank() == me);
      const std::string what = timeout.what();
      CAPTURE(what);
      CHECK(what.find("rank " + std::to_string(me) + ": all_reduce 'Backward iter 2'") == 0);
      CHECK(what.find("did not complete in 2000 ms") != std::string::npos);
    } catch (const std::runtime_error& own) {
      CHECK(me == failing_rank);
      CHECK(std::string(own.what()) == "planted failure on rank 1");
    }
  }
  CHECK(out[0] == world->size() * (world->size() + 1) / 2);
  // Once every rank saw its failure (a barrier on another communicator), the failed rank
  // joins the collective the others gave up on, so MPI can finish it before they end.
  swp::Stream& s = rt.stream("comm");
  std::int64_t one = 1, ranks = 0;
  auto barrier = control->all_reduce(s, std::span<const std::int64_t>(&one, 1),
                                     std::span<std::int64_t>(&ranks, 1), swp::ReduceOp::sum);
  s.synchronize();
  barrier.get();
  if (me == failing_rank) {
    world->set_timeout(60s);  // expected to complete: a deadline a slow host meets
    in[2] = me + 1;
    auto late = world->all_reduce(s, std::span<const std::int64_t>(&in[2], 1),
                                  std::span<std::int64_t>(&out[2], 1), swp::ReduceOp::sum);
    s.synchronize();
    late.get();
  }
}

}  // namespace test_mpi_input_dist
