#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/text.hpp"
#include "swp/async/cancelled.hpp"
#include "swp/engine/detail/run_failure.hpp"
#include "swp/engine/errors.hpp"

namespace test_run_failure {  // each test file's names apart (unity builds)

using swp::detail::Failure;
using swp::detail::FailureKind;
using swp::detail::RunFailure;
using swp::test::message_of;

namespace {

Failure task_failure(const std::string& task, std::int64_t iter, const std::string& what) {
  return Failure{.task = task,
                 .iter = iter,
                 .error = std::make_exception_ptr(std::runtime_error(what)),
                 .kind = FailureKind::task};
}

}  // namespace

TEST_CASE("RunFailure keeps the first root cause and names it in the stop's reason") {
  RunFailure failure;
  CHECK_FALSE(failure.failed());
  const auto first = failure.record(task_failure("lookup", 7, "bad row"));
  REQUIRE(first.has_value());
  CHECK(*first == "task 'lookup' failed in iteration 7");
  CHECK(failure.failed());
  // A later failure (a Cancelled caused by the first one's stop, say) changes nothing.
  CHECK_FALSE(failure
                  .record(Failure{.task = "",
                                  .iter = -1,
                                  .error = std::make_exception_ptr(swp::Cancelled("stop")),
                                  .kind = FailureKind::cancelled})
                  .has_value());
  const Failure kept = failure.snapshot();
  CHECK(kept.task == "lookup");
  CHECK(kept.iter == 7);
  CHECK(kept.kind == FailureKind::task);
  CHECK(kept.describe() == "task 'lookup' failed in iteration 7: bad row");
}

TEST_CASE("RunFailure's reasons: a deadline, a callback's and a cancel's own words") {
  RunFailure timeout;
  CHECK(timeout.record(Failure{.task = "",
                               .iter = 3,
                               .error = std::make_exception_ptr(std::runtime_error("late")),
                               .kind = FailureKind::timeout}) == "pipeline timed out");
  RunFailure cancelled;
  CHECK(cancelled.record(Failure{
            .task = "",
            .iter = -1,
            .error = std::make_exception_ptr(swp::Cancelled("pipeline cancelled: shutting down")),
            .kind = FailureKind::cancelled}) == "pipeline cancelled: shutting down");
  // Not a task's: described by its error alone, and the run ends with that very error.
  const Failure kept = cancelled.snapshot();
  CHECK(kept.describe() == "pipeline cancelled: shutting down");
  CHECK(kept.run_error() == kept.error);
  // An error that is no std::exception still fails the run, with no words of its own.
  RunFailure odd;
  CHECK(odd.record(Failure{.task = "",
                           .iter = 0,
                           .error = std::make_exception_ptr(42),
                           .kind = FailureKind::callback}) == "");
  CHECK(odd.snapshot().describe() == "an unknown exception");
}

TEST_CASE("RunFailure's run error of a task's failure is a TaskError naming task and iteration") {
  const Failure failure = task_failure("dense", 12, "nan in loss");
  try {
    std::rethrow_exception(failure.run_error());
  } catch (const swp::TaskError& e) {
    CHECK(e.task() == "dense");
    CHECK(e.iter() == 12);
    CHECK(message_of<std::exception>(e.nested()) == "nan in loss");
  }
}

TEST_CASE("RunFailure tells on_run_failed the run's error and drops what the callback throws") {
  RunFailure failure;
  std::exception_ptr told;
  int calls = 0;
  failure.set_on_run_failed([&](const std::exception_ptr& error) {
    told = error;
    ++calls;
    throw std::runtime_error("the callback's own trouble");
  });
  const Failure first = task_failure("emb", 2, "corrupt record");
  REQUIRE(failure.record(first));
  failure.tell_run_failed(first);  // must not throw
  CHECK(calls == 1);
  REQUIRE(told != nullptr);
  CHECK_THROWS_AS(std::rethrow_exception(told), swp::TaskError);
  // Without a callback it does nothing.
  RunFailure silent;
  silent.tell_run_failed(first);
}

TEST_CASE(
    "RunFailure forgets its record as a run starts, and a record lost to memory still fails") {
  RunFailure failure;
  REQUIRE(failure.record(task_failure("a", 0, "x")));
  failure.reset();
  CHECK_FALSE(failure.failed());
  const auto next = failure.record(task_failure("b", 5, "y"));
  REQUIRE(next.has_value());
  CHECK(failure.snapshot().task == "b");
  // mark_failed: the run is failed with no record; the snapshot says why in general words.
  RunFailure marked;
  marked.mark_failed();
  CHECK(marked.failed());
  const Failure generic = marked.snapshot();
  CHECK(generic.error != nullptr);
  CHECK_THROWS_AS(std::rethrow_exception(generic.run_error()), std::bad_alloc);
}

TEST_CASE("RunFailure: of failures recorded at once on several threads exactly one wins") {
  RunFailure failure;
  constexpr int threads = 4;
  std::atomic<int> winners{0};
  std::atomic<int> winner{-1};
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      if (failure.record(task_failure("t" + std::to_string(k), k, "boom"))) {
        winners.fetch_add(1);
        winner.store(k);
      }
    });
  for (auto& t : pool) t.join();
  CHECK(winners.load() == 1);
  const Failure kept = failure.snapshot();
  CHECK(kept.task == "t" + std::to_string(winner.load()));
  CHECK(kept.iter == winner.load());
}

}  // namespace test_run_failure
