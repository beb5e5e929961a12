#include "swp/engine/errors.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "support/random_plans.hpp"
#include "support/run_trace.hpp"
#include "support/seed.hpp"
#include "support/text.hpp"
#include "swp/async/cancelled.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_errors {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;
using swp::test::message_of;

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// A random plan whose task `victim` throws in iteration `bad_iter`.
swp::Plan<Ctx> with_failure(const swp::PipelinePlan& source, std::size_t victim, int bad_iter) {
  swp::Plan<Ctx> plan;
  for (std::size_t t = 0; t < source.tasks.size(); ++t) {
    const auto& planned = source.tasks[t];
    plan.add(planned.task.name,
             [t, victim, bad_iter](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
               co_await scope.cpu_work(2us);
               scope.device_work(5us);
               if (t == victim && ctx.batch == bad_iter)
                 throw std::runtime_error("bad batch " + std::to_string(ctx.batch));
             },
             planned.schedule);
  }
  plan.intra_iter_deps = source.intra_iter_deps;
  plan.inter_iter_deps = source.inter_iter_deps;
  return plan;
}

}  // namespace

TEST_CASE("TaskError names the task and the iteration and keeps the cause") {
  const swp::TaskError e("Forward", 7, std::make_exception_ptr(std::runtime_error("nan loss")));
  CHECK(std::string(e.what()) == "task 'Forward' failed in iteration 7: nan loss");
  CHECK(e.task() == "Forward");
  CHECK(e.iter() == 7);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(e.nested()), "nan loss", std::runtime_error);
}

TEST_CASE("CallbackError names the callback and the iteration and keeps the cause") {
  using Callback = swp::CallbackError::Callback;
  const swp::CallbackError source(Callback::source, 4,
                                  std::make_exception_ptr(std::runtime_error("corrupt record")));
  CHECK(std::string(source.what()) == "the batch source failed in iteration 4: corrupt record");
  CHECK(source.callback() == Callback::source);
  CHECK(source.iter() == 4);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(source.nested()), "corrupt record",
                       std::runtime_error);
  const swp::CallbackError retire(Callback::on_retire, 3,
                                  std::make_exception_ptr(std::runtime_error("disk full")));
  CHECK(std::string(retire.what()) == "on_retire failed in iteration 3: disk full");
  CHECK(retire.callback() == Callback::on_retire);
}

TEST_CASE_TEMPLATE("an exception at a random (task, iteration) surfaces, drains and allows a refill",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  std::mt19937 rng(swp::test::seed(99));
  for (int round = 0; round < 40; ++round) {
    const auto source = swp::test::random_plan(rng);
    const std::size_t victim = std::uniform_int_distribution<std::size_t>(0, source.tasks.size() - 1)(rng);
    const int bad_iter = std::uniform_int_distribution<int>(0, 7)(rng);
    CAPTURE(round);
    const auto backend = round % 2 == 0 ? swp::Backend::host : swp::Backend::sim;
    swp::Runtime rt({.backend = backend, .workers = 2});
    auto plan = with_failure(source, victim, bad_iter);
    auto pipe = Engine::template make<Ctx>(rt, plan, 3);
    pipe->set_timeouts({.retire = 20s});
    swp::test::RunTrace trace;
    pipe->set_observer(&trace);

    const auto batches = iota(8);
    pipe->fill_pipeline(batches);
    std::int64_t last = -1;
    try {
      while (auto i = pipe->progress()) last = i->iter();
      FAIL("the failure did not surface");
    } catch (const swp::TaskError& e) {
      CHECK(e.task() == source.tasks[victim].task.name);
      CHECK(e.iter() == bad_iter);
      CHECK(std::string(e.what()).find("bad batch " + std::to_string(bad_iter)) != std::string::npos);
    }
    CHECK(last < bad_iter);
    // Drained: every instance that started also finished.
    for (const auto& [key, cpu] : trace.cpu()) CHECK(cpu.finished != 0);
    // The same pipeline runs again, this time over data that does not fail.
    const auto good = std::vector<int>{100, 101, 102};
    auto retired = 0;
    pipe->fill_pipeline(good);
    while (pipe->progress()) ++retired;
    CHECK(retired == 3);
  }
}

TEST_CASE_TEMPLATE("a stuck task times out with every waiter named, then the pipeline refills",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    swp::Promise<> never;  // what "Load" waits for in iteration 1; nobody completes it
    swp::Plan<Ctx> plan;
    auto load = plan.add("Load", [&never](Ctx& ctx) -> swp::Co<void> {
      if (ctx.iter_idx == 1) co_await never.get_future();
    }, {.stage = 0, .thread_group = "io"});
    auto fwd = plan.add("Forward", [](Ctx&) {}, {.stage = 1, .thread_group = "compute"});
    plan.intra_iter_deps = {{fwd, load}};
    auto pipe = Engine::template make<Ctx>(rt, plan, 2);
    pipe->set_timeouts({.retire = 2s, .sequencer = 30s, .check_interval = 20ms});
    const auto batches = iota(4);
    pipe->fill_pipeline(batches);
    REQUIRE(swp::test::iter_of(pipe->progress()) == 0);
    try {
      pipe->progress();
      FAIL("no timeout");
    } catch (const swp::PipelineTimeout& e) {
      const std::string what = e.what();
      CHECK(what.find("iteration 1") != std::string::npos);
      // Load(1) awaits a future: suspended, not running (the report once said "running").
      CHECK(what.find("Load (iter 1) on lane 'io', stream 'default': its body is suspended in "
                      "an await") != std::string::npos);
      // The clock engine released Forward(1), which waits; the data-flow engine holds it back.
      CHECK(what.find("Forward (iter 1) on lane 'compute', stream 'default': ") !=
            std::string::npos);
      CHECK(what.find("waits for Load (iter 1)") != std::string::npos);
      if (backend == swp::Backend::sim) CHECK(what.find("deadlock") != std::string::npos);
    }
    // The stuck await was cancelled, so the pipeline drained and can run again.
    never.set_value();
    int retired = 0;
    pipe->fill_pipeline(std::vector<int>{0});
    while (pipe->progress()) ++retired;
    CHECK(retired == 1);
  }
}

namespace {

// Load (stage 0) -> Square (stage 1) on two lanes; on_retire records what retired.
struct Squared {
  int value = 0;
};
using SquareCtx = swp::IterContext<int, Squared>;

// Load throws swp::Cancelled for batch `cancel_at` (its own cancellation, say of a request
// it made), not the pipeline's.
swp::Plan<SquareCtx> square_plan(int cancel_at = -1) {
  swp::Plan<SquareCtx> plan;
  auto load = plan.add("Load", [cancel_at](SquareCtx& ctx) -> swp::Co<int> {
    if (ctx.batch == cancel_at) throw swp::Cancelled("request aborted");
    co_return ctx.batch;
  }, {.stage = 0, .thread_group = "io"});
  plan.add("Square", [load](SquareCtx& ctx) -> swp::Co<void> {
    const int& x = co_await ctx.get(load);
    ctx.value = x * x;
  }, {.stage = 1, .thread_group = "compute"}, swp::reads(load));
  return plan;
}

// What on_retire saw: (iteration, batch, square).
struct Retired {
  std::int64_t iter;
  int batch, value;
  bool operator==(const Retired&) const = default;
};

// Runs to the end or to the first error (returned); `retired` gets what progress() returned.
template <class Pipe>
std::exception_ptr run_until_error(Pipe& pipe, std::vector<std::int64_t>& retired) {
  try {
    while (auto i = pipe.progress()) retired.push_back(i->iter());
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

// After a failed run: nothing is left to retire (no phantom iteration), and a refill runs
// every iteration in order with correct results, numbered on from the failed run's: after
// every iteration it retired, never reusing one it admitted.
template <class Pipe>
void check_refill(Pipe& pipe, std::vector<Retired>& seen) {
  CHECK_THROWS_AS(pipe.progress(), swp::PipelineStateError);
  const std::int64_t after = seen.empty() ? -1 : seen.back().iter;
  seen.clear();
  std::vector<std::int64_t> retired;
  pipe.fill_pipeline(std::vector<int>{10, 11, 12, 13, 14});
  CHECK_FALSE(run_until_error(pipe, retired));
  REQUIRE(retired.size() == 5);
  const std::int64_t first = retired.front();
  CHECK(first > after);
  CHECK(retired == std::vector<std::int64_t>{first, first + 1, first + 2, first + 3, first + 4});
  CHECK(seen == std::vector<Retired>{{first, 10, 100}, {first + 1, 11, 121}, {first + 2, 12, 144},
                                     {first + 3, 13, 169}, {first + 4, 14, 196}});
}

// The square plan on `backend` (Load cancels itself for batch `cancel_at`), max_depth 2,
// with what on_retire saw in `seen`.
template <class Engine>
struct SquareRun {
  swp::Runtime rt;
  std::unique_ptr<swp::Pipeline<SquareCtx>> pipe;
  std::vector<Retired> seen;

  explicit SquareRun(swp::Backend backend, int cancel_at = -1)
      : rt({.backend = backend, .workers = 2}),
        pipe(Engine::template make<SquareCtx>(rt, square_plan(cancel_at), 2)) {
    pipe->set_timeouts({.retire = 20s});
    pipe->on_retire([this](const SquareCtx& c) { seen.push_back({c.iter_idx, c.batch, c.value}); });
  }
};

}  // namespace

TEST_CASE_TEMPLATE("a throwing source fails the run once naming the iteration, then it refills",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // The clock engine once lost the period when the source threw: a caller that kept calling
  // progress() got "phantom" iterations that were never admitted, forever.
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    SquareRun<Engine> run(backend);
    int calls = 0;
    run.pipe->fill_pipeline([&]() -> std::optional<int> {
      if (calls == 4) throw std::runtime_error("corrupt record");
      return calls++;
    });
    std::vector<std::int64_t> retired;
    const auto error = run_until_error(*run.pipe, retired);
    REQUIRE(error);
    CHECK(message_of<swp::CallbackError>(error) ==
          "the batch source failed in iteration 4: corrupt record");
    // Every iteration progress() returned retired once, in order, with its own batch; the
    // iteration in flight beside the failed admission was cancelled, not retired.
    REQUIRE(retired.size() <= 4);
    std::vector<Retired> expected;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(retired.size()); ++i) {
      CHECK(retired[static_cast<std::size_t>(i)] == i);
      expected.push_back({i, static_cast<int>(i), static_cast<int>(i * i)});
    }
    CHECK(run.seen == expected);
    check_refill(*run.pipe, run.seen);
  }
}

TEST_CASE_TEMPLATE("a source throwing for the first batch fails the first progress, then it refills",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    SquareRun<Engine> run(backend);
    // fill_pipeline calls no source (it may be called under the caller's locks).
    run.pipe->fill_pipeline([]() -> std::optional<int> { throw std::runtime_error("no data"); });
    CHECK_THROWS_WITH_AS(run.pipe->progress(), "the batch source failed in iteration 0: no data",
                         swp::CallbackError);
    CHECK(run.seen.empty());
    check_refill(*run.pipe, run.seen);
  }
}

TEST_CASE_TEMPLATE("an on_retire callback that throws fails the run once, then it refills",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    SquareRun<Engine> run(backend);
    auto& seen = run.seen;
    run.pipe->on_retire([&seen](const SquareCtx& c) {
      if (c.batch == 3) throw std::runtime_error("disk full");
      seen.push_back({c.iter_idx, c.batch, c.value});
    });
    std::vector<std::int64_t> retired;
    run.pipe->fill_pipeline(std::vector<int>{0, 1, 2, 3, 4, 5, 6});
    const auto error = run_until_error(*run.pipe, retired);
    REQUIRE(error);
    CHECK(message_of<swp::CallbackError>(error) == "on_retire failed in iteration 3: disk full");
    CHECK(retired == std::vector<std::int64_t>{0, 1, 2});
    CHECK(seen == std::vector<Retired>{{0, 0, 0}, {1, 1, 1}, {2, 2, 4}});
    check_refill(*run.pipe, seen);
  }
}

TEST_CASE_TEMPLATE("a body's own Cancelled fails the run like any error, then it refills", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // Only a Cancelled caused by the pipeline's own stop is a consequence of another failure. A
  // body cancelled for its own reasons was once swallowed: its iteration retired as if it had
  // run, and its dependents were skipped without a word.
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    SquareRun<Engine> run(backend, 2);
    std::vector<std::int64_t> retired;
    run.pipe->fill_pipeline(std::vector<int>{0, 1, 2, 3, 4, 5});
    const auto error = run_until_error(*run.pipe, retired);
    REQUIRE(error);
    CHECK(message_of<swp::TaskError>(error) == "task 'Load' failed in iteration 2: request aborted");
    CHECK(retired.size() <= 2);
    CHECK(run.seen.size() == retired.size());
    check_refill(*run.pipe, run.seen);
  }
}

TEST_CASE_TEMPLATE("a source error met while admitting surfaces from drain() as well", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // One slot: the progress() that retires iteration 1 admits 2, whose batch fails; nothing is
  // in flight then, and drain() once returned as if the run had ended well.
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  plan.add("Only", [](Ctx&) {});
  auto pipe = Engine::template make<Ctx>(rt, plan, 1);
  int calls = 0;
  pipe->fill_pipeline([&]() -> std::optional<int> {
    if (calls == 2) throw std::runtime_error("corrupt record");
    return calls++;
  });
  CHECK(swp::test::iter_of(pipe->progress()) == 0);
  CHECK(swp::test::iter_of(pipe->progress()) == 1);
  CHECK_THROWS_WITH_AS(pipe->drain(), "the batch source failed in iteration 2: corrupt record",
                       swp::CallbackError);
  CHECK(pipe->run(std::vector<int>{7, 8}).iterations == 2);
}

}  // namespace test_errors
