// Pipeline::run(): progress() until the end, in one call to the engine (RunDriver::retire_all).

#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/engines.hpp"
#include "swp/async/asio_scheduler.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/fast_paths.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/runtime.hpp"

namespace test_pipeline_run {  // each test file's names apart (unity builds)

namespace {

// What a run told its caller: the iterations retired, those handed to on_failure (with the
// start of why), in order, what it threw, and how many iterations run() counted.
struct RunOutcome {
  std::vector<std::int64_t> retired;
  std::vector<std::string> failed;
  std::string thrown;
  std::int64_t counted = -1;
  bool operator==(const RunOutcome&) const = default;
};

std::ostream& operator<<(std::ostream& out, const RunOutcome& o) {
  out << "retired " << o.retired.size() << " (last " << (o.retired.empty() ? -1 : o.retired.back())
      << "), failed " << o.failed.size() << ", counted " << o.counted << ", thrown '" << o.thrown
      << "'";
  return out;
}

enum class Trouble { none, task_throws, on_retire_throws, source_throws, cancel_in_on_retire };

using C = swp::IterContext<int>;
constexpr int trouble_at = 23;  // the batch where trouble strikes

// A 3-stage chain with a body in every task, each on its own lane (every task runs in place
// with one thread); with Trouble::task_throws, T1 throws at batch `trouble_at`.
swp::Plan<C> chain_plan(Trouble trouble) {
  swp::Plan<C> plan;
  for (int s = 0; s < 3; ++s) {
    const std::string name = "T" + std::to_string(s);
    plan.add(name,
             [s, trouble](C& ctx) {
               if (s == 1 && trouble == Trouble::task_throws && ctx.batch == trouble_at)
                 throw std::runtime_error("bad batch");
             },
             {.stage = s, .thread_group = "lane" + std::to_string(s)});
    if (s > 0) plan.intra_iter_deps.push_back({name, "T" + std::to_string(s - 1)});
  }
  return plan;
}

// The chain over 40 batches, `trouble` striking at batch `trouble_at`, run by run() or by a
// progress() loop, which must tell the caller the same.
template <class Engine>
RunOutcome run_in_trouble(swp::Backend backend, Trouble trouble, bool by_run) {
  constexpr int at = trouble_at;
  swp::Runtime rt({.backend = backend, .workers = 0});
  auto pipe = Engine::template make<C>(rt, chain_plan(trouble), 3);
  RunOutcome out;
  pipe->on_retire([&](const C& ctx) {
    out.retired.push_back(ctx.iter_idx);
    if (ctx.batch != at) return;
    if (trouble == Trouble::on_retire_throws) throw std::runtime_error("retire hook");
    if (trouble == Trouble::cancel_in_on_retire) pipe->cancel("enough");
  });
  pipe->on_failure([&](const C& ctx, const std::exception_ptr& why) {
    std::string what;
    try {
      std::rethrow_exception(why);
    } catch (const std::exception& e) {
      what = e.what();
    }
    out.failed.push_back(std::to_string(ctx.iter_idx) + ": " + what.substr(0, 40));
  });
  int next = 0;
  auto source = [&]() -> std::optional<int> {
    if (trouble == Trouble::source_throws && next == at) throw std::runtime_error("source");
    if (next == 40) return std::nullopt;
    return next++;
  };
  try {
    if (by_run) {
      out.counted = pipe->run(source).iterations;
    } else {
      pipe->fill_pipeline(source);
      std::int64_t counted = 0;
      while (pipe->progress()) ++counted;
      pipe->drain();
      out.counted = counted;
    }
  } catch (const std::exception& e) {
    out.thrown = e.what();
  }
  const RunOutcome told = out;
  // Whatever happened, the pipeline runs again.
  CHECK(pipe->run(std::vector<int>{1, 2}).iterations == 2);
  CHECK(out.retired.size() == told.retired.size() + 2);
  return told;
}

// The order in which a run with one thread takes its batches ("s<batch>") and retires its
// iterations ("r<iter>"), run by run() or by a progress() loop; `all_paths`: whether the
// runtime took every fast path (unless SWP_FAST_PATHS says otherwise).
template <class Engine>
std::vector<std::string> take_and_retire_order(swp::Backend backend, bool by_run,
                                               bool* all_paths = nullptr) {
  constexpr int batches = 30;
  swp::Runtime rt({.backend = backend, .workers = 0});
  if (all_paths != nullptr) *all_paths = rt.fast_paths() == swp::FastPaths::all();
  auto pipe = Engine::template make<C>(rt, chain_plan(Trouble::none), 3);
  std::vector<std::string> order;
  pipe->on_retire([&](const C& ctx) { order.push_back("r" + std::to_string(ctx.iter_idx)); });
  int next = 0;
  auto source = [&]() -> std::optional<int> {
    if (next == batches) return std::nullopt;
    order.push_back("s" + std::to_string(next));
    return next++;
  };
  if (by_run) {
    CHECK(pipe->run(source).iterations == batches);
  } else {
    pipe->fill_pipeline(source);
    while (pipe->progress()) {
    }
    pipe->drain();
  }
  return order;
}

}  // namespace

TEST_CASE_TEMPLATE("run() tells the caller what a progress() loop would, failures included", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // With one thread, run() retires undriven in one loop (RunDriver::retire_all): the same
  // iterations retire and fail, the same error surfaces, and the pipeline runs again.
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    for (Trouble trouble : {Trouble::none, Trouble::task_throws, Trouble::on_retire_throws,
                            Trouble::source_throws, Trouble::cancel_in_on_retire}) {
      CAPTURE(swp::backend_name(backend));
      CAPTURE(static_cast<int>(trouble));
      const RunOutcome by_run = run_in_trouble<Engine>(backend, trouble, true);
      const RunOutcome by_progress = run_in_trouble<Engine>(backend, trouble, false);
      CHECK(by_run == by_progress);
      if (trouble == Trouble::none) {
        CHECK(by_run.counted == 40);
        CHECK(by_run.retired.size() == 40);
        CHECK(by_run.thrown.empty());
      } else {
        // It stopped at batch 23: something surfaced, and every iteration admitted was
        // either retired or handed to on_failure.
        CHECK_FALSE(by_run.thrown.empty());
        CHECK(by_run.counted == -1);
        CHECK(by_run.retired.size() <= 24);
      }
    }
  }
}

TEST_CASE_TEMPLATE("with one thread, a batch is taken after the retirement that frees its slot",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // RunDriver::admit_unless_retirable: run() and a progress() loop take and retire in one
  // order; batch k (iteration k) waits for iteration k - depth's retirement; an iteration
  // complete when the one before it retired retires before the next batch is taken, so the
  // data-flow engine, which runs each iteration whole with one thread (on the host, with its
  // fast paths), retires in runs of `depth` between its admissions.
  constexpr int depth = 3;
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    bool all_paths = false;
    const auto by_run = take_and_retire_order<Engine>(backend, true, &all_paths);
    const auto by_progress = take_and_retire_order<Engine>(backend, false);
    CHECK(by_run == by_progress);
    REQUIRE(by_run.size() == 60);
    const auto at = [&](const std::string& event) {
      return std::find(by_run.begin(), by_run.end(), event) - by_run.begin();
    };
    for (int k = 0; k < 30; ++k) {
      CHECK(at("s" + std::to_string(k)) < at("r" + std::to_string(k)));
      if (k >= depth) CHECK(at("r" + std::to_string(k - depth)) < at("s" + std::to_string(k)));
    }
    if (std::is_same_v<Engine, swp::test::UseDataFlow> && backend == swp::Backend::host &&
        all_paths) {
      // Past the start (s0 s1 s2 r0 s3), each admission follows `depth` retirements in a
      // row: r1 r2 r3 s4 s5 s6 r4 r5 r6 s7 ... (the last run retires what is left).
      std::vector<int> runs;  // the lengths of the runs of retirements
      for (std::size_t e = 0; e < by_run.size(); ++e) {
        if (by_run[e][0] != 'r') continue;
        if (e == 0 || by_run[e - 1][0] != 'r') runs.push_back(0);
        ++runs.back();
      }
      REQUIRE(runs.size() > 2);
      for (std::size_t r = 1; r + 1 < runs.size(); ++r) CHECK(runs[r] == depth);
    }
  }
}

TEST_CASE_TEMPLATE("run() on a thread running the lanes' io_context is refused before it admits",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // As progress() is (it would stall the handlers it waits for); the pipeline stays usable, and
  // from another thread the same run goes through.
  boost::asio::io_context io;
  swp::Runtime rt(std::make_unique<swp::AsioScheduler>(io.get_executor()));
  auto pipe = Engine::template make<C>(rt, chain_plan(Trouble::none), 2);
  std::vector<std::int64_t> retired;
  pipe->on_retire([&](const C& ctx) { retired.push_back(ctx.iter_idx); });
  std::string refused;
  boost::asio::post(io, [&] {
    try {
      (void)pipe->run(std::vector<int>{8, 9});
    } catch (const swp::PipelineStateError& e) {
      refused = e.what();
    }
    pipe->drain();  // nothing admitted: nothing to wait for
  });
  io.run();
  CHECK(refused.find("run() called on a thread running the io_context the pipeline's lanes "
                     "run on") != std::string::npos);
  CHECK(retired.empty());
  io.restart();
  auto work = boost::asio::make_work_guard(io);
  std::thread lanes([&] { io.run(); });
  CHECK(pipe->run(std::vector<int>{8, 9}).iterations == 2);
  work.reset();
  lanes.join();
  CHECK(retired.size() == 2);
}

}  // namespace test_pipeline_run
