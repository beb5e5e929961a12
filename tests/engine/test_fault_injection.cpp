// Fault injection: random plans on both engines, host backend (real threads). Every run
// injects one fault — a task throws, a task is cancelled (its own swp::Cancelled), a task
// stalls past the retire deadline, the source throws, on_retire throws — and checks that
//  - the error surfaces once, naming the task (or callback) and the iteration,
//  - everything in flight drained (no body is left running), and the pipeline is empty,
//  - the iterations before it retired in order, each once, with the results of a serial run.
// The next run on the same pipeline is the refill; each plan ends with a clean run of all its
// iterations. Under ASan, LSan checks at exit that none of it leaked. Nothing here can hang:
// every wait has a deadline, and a stall's deadline is tiny.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/bound_plans.hpp"
#include "support/engines.hpp"
#include "support/random_plans.hpp"
#include "support/seed.hpp"
#include "swp/async/cancelled.hpp"
#include "swp/async/future.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/engine/errors.hpp"

namespace test_fault_injection {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using swp::TaskIndex;
using swp::test::BoundCtx;

enum class Fault { task_throws, task_cancelled, task_stalls, source_throws, on_retire_throws };
constexpr int fault_kinds = 5;

const char* fault_name(Fault f) {
  switch (f) {
    case Fault::task_throws: return "task throws";
    case Fault::task_cancelled: return "task cancelled";
    case Fault::task_stalls: return "task stalls";
    case Fault::source_throws: return "source throws";
    case Fault::on_retire_throws: return "on_retire throws";
  }
  return "";
}

struct Injection {
  Fault fault = Fault::task_throws;
  TaskIndex task = 0;
  std::int64_t iter = -1;  // -1: no fault (a clean run)
};

swp::Co<void> throw_fault() {
  throw std::runtime_error("injected fault");
  co_return;
}

swp::Co<void> cancel_fault() {
  throw swp::Cancelled("injected cancellation");
  co_return;
}

swp::Co<void> stall_fault(swp::Future<> never) { co_await never; }

// Bodies ask it whether (task, iter) is the one to fail. Set between runs only, while no body
// runs: the lane submissions of the next fill publish it.
struct Injector {
  Injection now;
  swp::Promise<> never;  // what a stalled body awaits; only the run's cancellation ends it

  swp::Co<void> fault_for(TaskIndex task, std::int64_t iter) const {
    if (iter != now.iter || task != now.task) return {};
    switch (now.fault) {
      case Fault::task_throws: return throw_fault();
      case Fault::task_cancelled: return cancel_fault();
      case Fault::task_stalls: return stall_fault(never.get_future());
      default: return {};
    }
  }
};

struct Tally {
  int injected[fault_kinds] = {};
  int surfaced[fault_kinds] = {};
  int runs = 0;
};

// Whether `error` is the one `injection` must surface as: the right type, naming the task (or
// callback) and the iteration.
// `base`: the run's first iteration (injections count from it).
bool surfaced_as_expected(const std::exception_ptr& error, const Injection& injection,
                          const swp::PlanGraph& graph, std::int64_t base) {
  const std::string task = graph.name(injection.task);
  const std::int64_t iter = base + injection.iter;
  try {
    std::rethrow_exception(error);
  } catch (const swp::TaskError& e) {
    if (e.task() != task || e.iter() != iter) return false;
    try {
      std::rethrow_exception(e.nested());
    } catch (const swp::Cancelled& c) {
      return injection.fault == Fault::task_cancelled &&
             std::string(c.what()) == "injected cancellation";
    } catch (const std::runtime_error& r) {
      return injection.fault == Fault::task_throws && std::string(r.what()) == "injected fault";
    }
  } catch (const swp::CallbackError& e) {
    using Callback = swp::CallbackError::Callback;
    const auto expected = injection.fault == Fault::source_throws ? Callback::source
                                                                   : Callback::on_retire;
    return (injection.fault == Fault::source_throws ||
            injection.fault == Fault::on_retire_throws) &&
           e.callback() == expected && e.iter() == iter;
  } catch (const swp::PipelineTimeout& e) {
    // The stalled instance was admitted at fill (iteration < slots) and never finishes, so
    // every report of the run names it, whichever wait timed out first on a busy machine.
    const std::string what = e.what();
    return injection.fault == Fault::task_stalls &&
           what.find("\n  " + task + " (iter " + std::to_string(iter) + ") on lane") !=
               std::string::npos;
  } catch (...) {
  }
  return false;
}

// One run over `batches` with `injection` (or none); checks everything but the error's
// identity, which it returns (empty on a clean run).
template <class Pipe>
std::exception_ptr run_once(Pipe& pipe, Injector& injector, const Injection& injection,
                            const std::vector<std::uint64_t>& batches,
                            swp::test::Results& results, const swp::test::Results& reference,
                            const swp::PlanGraph& graph, std::int64_t& base) {
  injector.now = injection;
  base = pipe.next_iteration();  // this run's first iteration
  results.clear();
  const bool stall = injection.iter >= 0 && injection.fault == Fault::task_stalls;
  pipe.set_timeouts(stall ? swp::EngineTimeouts{.retire = 2ms, .check_interval = 1ms, .drain = 20s}
                          : swp::EngineTimeouts{.retire = 20s, .drain = 20s});
  std::vector<std::int64_t> retired, seen;
  // Every admitted iteration goes to exactly one callback: on_retire, or on_failure with why.
  std::vector<std::int64_t> handed;
  pipe.on_failure([&](const BoundCtx& ctx, const std::exception_ptr& why) {
    CHECK(why);
    handed.push_back(ctx.iter_idx);
  });
  pipe.on_retire([&](const BoundCtx& ctx) {
    handed.push_back(ctx.iter_idx);
    if (injection.fault == Fault::on_retire_throws && ctx.iter_idx - ctx.first_iter == injection.iter)
      throw std::runtime_error("injected on_retire fault");
    seen.push_back(ctx.iter_idx);
  });
  std::size_t next = 0;
  auto source = [&]() -> std::optional<std::uint64_t> {
    if (injection.fault == Fault::source_throws && static_cast<std::int64_t>(next) == injection.iter)
      throw std::runtime_error("injected source fault");
    if (next == batches.size()) return std::nullopt;
    return batches[next++];
  };
  std::exception_ptr error;
  try {
    pipe.fill_pipeline(source);
    while (auto i = pipe.progress()) retired.push_back(i->iter());
    pipe.drain();
  } catch (...) {
    error = std::current_exception();
  }
  // A run drains bodies, not streams: device work of its iterations may still be queued, and
  // the next run's first iterations would wait for it to have their slots (with the retire
  // deadline, 2 ms in a stall's run: on a busy machine that wait, not the stall, would then
  // time out first). Each run starts with the streams idle, as the fault's check assumes.
  pipe.synchronize();
  // Drained: every body that started has ended; the run is over (no second error, no
  // phantom iteration).
  CHECK(results.active.load() == 0);
  CHECK_THROWS_AS(pipe.progress(), swp::PipelineStateError);
  std::ranges::sort(handed);
  std::vector<std::int64_t> admitted;
  for (std::int64_t i = base; i < pipe.next_iteration(); ++i) admitted.push_back(i);
  CHECK(handed == admitted);
  // What retired did so in order, once, seen by on_retire, with complete, correct results
  // (numbered on from the runs before; results are keyed by the place in the run).
  const std::int64_t first = base;
  for (std::size_t i = 0; i < retired.size(); ++i)
    CHECK(retired[i] == first + static_cast<std::int64_t>(i));
  CHECK(seen == retired);
  std::lock_guard lock(results.mutex);
  for (std::int64_t i : retired)
    for (TaskIndex t = 0; t < graph.size(); ++t) CHECK(results.value.contains({t, i - first}));
  for (const auto& [key, value] : results.value) CHECK(value == reference.value.at(key));
  for (const auto& [key, runs] : results.runs) CHECK(runs == 1);
  if (injection.iter < 0) {
    CHECK_FALSE(error);
    CHECK(retired.size() == batches.size());
  } else if (injection.fault == Fault::on_retire_throws) {
    CHECK(static_cast<std::int64_t>(retired.size()) == injection.iter);
  } else {
    CHECK(static_cast<std::int64_t>(retired.size()) <= injection.iter);
  }
  return error;
}

// Small costs: the faults, not the work, are what is exercised (device work still records
// events and stream waits that a failure must drain).
constexpr swp::test::RandomPlanShape small_costs{.max_device_us = 3, .max_cpu_us = 2};

template <class Engine>
void inject_faults(std::uint32_t seed, int plans, int faults_per_plan, Tally& tally,
                   unsigned workers = 2, const swp::test::RandomPlanShape& shape = small_costs) {
  std::mt19937 rng(swp::test::seed(seed));
  auto uniform = [&](auto lo, auto hi) {
    return std::uniform_int_distribution<decltype(hi)>(lo, hi)(rng);
  };
  for (int n = 0; n < plans; ++n) {
    const auto source = swp::test::random_plan(rng, shape);
    const auto graph = swp::validate(source);
    const int iterations = uniform(2, 8);
    const int max_depth = uniform(1, 4);
    std::vector<std::uint64_t> batches;
    for (int i = 0; i < iterations; ++i) batches.push_back(rng());
    CAPTURE(n);
    CAPTURE(swp::plan_to_json(source));

    swp::test::Results reference;
    {
      swp::Runtime sim({.backend = swp::Backend::sim});
      auto plan = swp::test::bind(source, reference);
      Engine::template make<BoundCtx>(sim, plan, max_depth)->run_serial(batches);
    }
    Injector injector;
    const swp::test::BodyHook hook = [&injector](TaskIndex t, std::int64_t i) {
      return injector.fault_for(t, i);
    };
    swp::test::Results results;
    swp::Runtime rt({.backend = swp::Backend::host, .workers = workers});
    auto plan = swp::test::bind(source, results, {~TaskIndex{0}, -1}, &hook);
    auto pipe = Engine::template make<BoundCtx>(rt, plan, max_depth);
    const int slots = pipe->depth();
    for (int f = 0; f < faults_per_plan; ++f) {
      // Stalls cost a (tiny) deadline each: one fault in ten.
      constexpr Fault quick[] = {Fault::task_throws, Fault::task_cancelled, Fault::source_throws,
                                 Fault::on_retire_throws};
      const int roll = uniform(0, 39);
      const Fault fault = roll < 4 ? Fault::task_stalls : quick[roll % 4];
      const int last =
          fault == Fault::task_stalls ? std::min(iterations, slots) - 1 : iterations - 1;
      const Injection injection{
          fault, static_cast<TaskIndex>(uniform(std::size_t{0}, graph.size() - 1)), uniform(0, last)};
      const std::string fault_named = fault_name(fault);
      CAPTURE(fault_named);
      CAPTURE(injection.task);
      CAPTURE(injection.iter);
      ++tally.injected[static_cast<int>(fault)];
      ++tally.runs;
      std::int64_t base = 0;
      const auto error =
          run_once(*pipe, injector, injection, batches, results, reference, graph, base);
      REQUIRE_MESSAGE(error, "the injected fault did not surface");
      const bool ok = surfaced_as_expected(error, injection, graph, base);
      if (ok) {
        ++tally.surfaced[static_cast<int>(fault)];
      } else {
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          const std::string what = std::string("unexpected error: ") + e.what();
          FAIL_CHECK(what);
        }
      }
    }
    ++tally.runs;
    std::int64_t base = 0;
    run_once(*pipe, injector, Injection{}, batches, results, reference, graph, base);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("injected faults surface once, drain, and the pipeline refills and runs right",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  Tally tally;
  inject_faults<Engine>(Engine::name[0] == 'c' ? 1301 : 1303, 50, 24, tally);
  int injected = 0, surfaced = 0;
  for (int k = 0; k < fault_kinds; ++k) {
    CHECK(tally.injected[k] > 0);
    CHECK(tally.surfaced[k] == tally.injected[k]);
    injected += tally.injected[k];
    surfaced += tally.surfaced[k];
  }
  // The figures docs/reliability.md records (printed so a run shows them).
  std::printf("fault injection (%s): %d runs, %d faults injected, %d surfaced (", Engine::name,
              tally.runs, injected, surfaced);
  for (int k = 0; k < fault_kinds; ++k)
    std::printf("%s%s %d", k ? ", " : "", fault_name(static_cast<Fault>(k)), tally.injected[k]);
  std::printf(")\n");
}

TEST_CASE_TEMPLATE("injected faults surface once with the caller the only thread", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // No workers: the clock engine runs a period's ready instances as it releases them, inside
  // the call that opened the period; a fault there must surface the same way.
  Tally tally;
  inject_faults<Engine>(Engine::name[0] == 'c' ? 1307 : 1309, 20, 24, tally, 0);
  for (int k = 0; k < fault_kinds; ++k) CHECK(tally.surfaced[k] == tally.injected[k]);
}

TEST_CASE_TEMPLATE("injected faults surface once with the caller the only thread and every task "
                   "alone on its lane",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Data-flow runs whole iterations in place then (UncountedRuns::run_iteration): a fault
  // hands the rest of its iteration to the general path, which must surface it the same way.
  // Little device work: a run's first stream use ends that for the run.
  Tally tally;
  constexpr swp::test::RandomPlanShape alone{.lanes = 1000,
                                             .ordered_probability = 0,
                                             .max_device_us = 3,
                                             .max_cpu_us = 2,
                                             .device_probability = 0.05};
  inject_faults<Engine>(Engine::name[0] == 'c' ? 1311 : 1313, 20, 24, tally, 0, alone);
  for (int k = 0; k < fault_kinds; ++k) {
    CHECK(tally.injected[k] > 0);
    CHECK(tally.surfaced[k] == tally.injected[k]);
  }
}

}  // namespace test_fault_injection
