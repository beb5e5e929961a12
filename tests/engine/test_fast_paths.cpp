// The engines' shortcuts (swp::FastPaths): how they are named and chosen, that switching one
// off changes nothing but the path (each against the reference path on random plans, both
// engines, every drive form, host and sim), and that the switch reaches the engines.

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/alone_thresholds.hpp"
#include "support/checked_runs.hpp"
#include "support/engines.hpp"
#include "support/text.hpp"
#include "swp/engine/fast_paths.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/runtime.hpp"

namespace test_fast_paths {  // each test file's names apart (unity builds)

using swp::FastPaths;
using swp::test::CheckedRuns;
using swp::test::Drive;

namespace {

// SWP_FAST_PATHS set to `value` (unset: nullopt) for the scope; the old value comes back.
class FastPathsVariable {
 public:
  explicit FastPathsVariable(const std::optional<std::string>& value) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  FastPathsVariable(const FastPathsVariable&) = delete;
  FastPathsVariable& operator=(const FastPathsVariable&) = delete;
  ~FastPathsVariable() {
    if (old_) {
      ::setenv(name, old_->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }

 private:
  static constexpr const char* name = "SWP_FAST_PATHS";
  std::optional<std::string> old_;
};

// All, none, lane_claims alone (the others need it), and each shortcut off alone (the last
// three: uncounted, in_place, lane_claims).
struct Configuration {
  std::string name;
  FastPaths paths;
};
std::vector<Configuration> configurations() {
  std::vector<Configuration> out;
  for (const char* spec : {"all", "none", "lane_claims", "lane_claims,in_place",
                           "lane_claims,uncounted", "in_place,uncounted"})
    out.push_back({spec, FastPaths::parse(spec)});
  return out;
}

// Runs `runs` under every configuration (its seed, so its plans, the same for each).
template <class Engine>
void under_every_configuration(CheckedRuns runs) {
  for (const Configuration& configuration : configurations()) {
    CAPTURE(configuration.name);
    runs.fast_paths = configuration.paths;
    swp::test::checked_runs<Engine>(runs);
  }
}

// Plans whose tasks are mostly alone on their lanes (the shortcuts' ground), with some on
// shared lanes and some globally ordered (where they give way to the general path).
constexpr swp::test::RandomPlanShape mostly_alone{.lanes = 12,
                                                  .ordered_probability = 0.1,
                                                  .max_device_us = 3,
                                                  .max_cpu_us = 2,
                                                  .device_probability = 0.15};
// Every task alone on its lane, no device work: whole iterations and periods run uncounted.
constexpr swp::test::RandomPlanShape all_alone{.lanes = 1000,
                                               .ordered_probability = 0,
                                               .max_device_us = 0,
                                               .max_cpu_us = 0,
                                               .device_probability = 0};

}  // namespace

TEST_CASE("FastPaths parses all, none and lists of names, and names what it does not know") {
  CHECK(FastPaths::parse("all") == FastPaths::all());
  CHECK(FastPaths::parse(" none ") == FastPaths::none());
  const FastPaths two = FastPaths::parse("lane_claims, uncounted");
  CHECK(two.lane_claims);
  CHECK_FALSE(two.in_place);
  CHECK(two.uncounted);
  CHECK(swp::to_string(two) == "lane_claims,uncounted");
  CHECK(swp::to_string(FastPaths::all()) == "all");
  CHECK(swp::to_string(FastPaths::none()) == "none");
  for (const Configuration& configuration : configurations()) {
    CAPTURE(configuration.name);
    CHECK(FastPaths::parse(swp::to_string(configuration.paths)) == configuration.paths);
  }
  try {
    (void)FastPaths::parse("lane_claims,inplace");
    FAIL("an unknown name was accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(swp::test::contains(e.what(), "'inplace'"));
    CHECK(swp::test::contains(e.what(), "in_place"));  // the valid names are listed
  }
  CHECK_THROWS_AS((void)FastPaths::parse("lane_claims,"), std::invalid_argument);
}

TEST_CASE("a runtime takes its fast paths from SWP_FAST_PATHS unless its options set them") {
  {
    const FastPathsVariable unset(std::nullopt);
    CHECK(swp::Runtime({.workers = 0}).fast_paths() == FastPaths::all());
  }
  {
    const FastPathsVariable set("lane_claims,in_place");
    CHECK(swp::Runtime({.workers = 0}).fast_paths() == FastPaths::parse("lane_claims,in_place"));
    CHECK(swp::Runtime({.workers = 0, .fast_paths = FastPaths::all()}).fast_paths() ==
          FastPaths::all());
    CHECK(swp::Runtime({.backend = swp::Backend::sim}).fast_paths() ==
          FastPaths::parse("lane_claims,in_place"));
  }
  {
    const FastPathsVariable bad("fast");
    try {
      swp::Runtime rt({.workers = 0});
      FAIL("a runtime was made with SWP_FAST_PATHS=fast");
    } catch (const std::invalid_argument& e) {
      CHECK(swp::test::contains(e.what(), "SWP_FAST_PATHS=fast"));
      CHECK(swp::test::contains(e.what(), "'fast'"));
    }
    // Set explicitly, the variable is not read.
    CHECK(swp::Runtime({.workers = 0, .fast_paths = FastPaths::none()}).fast_paths() ==
          FastPaths::none());
  }
}

TEST_CASE_TEMPLATE("with one thread, an instance runs where it is released only with in_place",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // A two-stage chain, each task alone on its lane: with in_place, iteration 0's first task
  // runs as its admission (period) ends, before the source is asked for iteration 1; without
  // it it is posted, and runs only once the caller drives the pool, after the admissions. The
  // clock's in_place runs only tasks under a lane claim; data-flow's also runs what an
  // admission posted to a lane.
  const bool data_flow = std::string_view(Engine::name) == "dataflow";
  using Ctx = swp::IterContext<int>;
  for (const Configuration& configuration : configurations()) {
    CAPTURE(configuration.name);
    const FastPaths& paths = configuration.paths;
    std::atomic<int> firsts{0};
    swp::Plan<Ctx> plan;
    const auto a = plan.add("a", [&](Ctx&) { ++firsts; }, {.stage = 0, .thread_group = "a"});
    plan.add(
        "b", [](Ctx&) {}, {.stage = 1, .thread_group = "b"}, swp::reads(a));
    swp::Runtime rt({.workers = 0, .fast_paths = paths});
    auto pipe = Engine::template make<Ctx>(rt, plan, 3);
    std::vector<int> firsts_at_call;
    int next = 0;
    pipe->fill_pipeline([&]() -> std::optional<int> {
      firsts_at_call.push_back(firsts.load());
      return next < 6 ? std::optional<int>(next++) : std::nullopt;
    });
    int retired = 0;
    while (pipe->progress()) ++retired;
    CHECK(retired == 6);
    REQUIRE(firsts_at_call.size() >= 2);
    CHECK((firsts_at_call[1] == 1) == (paths.in_place && (data_flow || paths.lane_claims)));
  }
}

TEST_CASE_TEMPLATE("every configuration of the fast paths runs random plans as a serial run",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  SUBCASE("the caller the only thread, progress()") {
    under_every_configuration<Engine>({.plans = 6,
                                       .seed = 101,
                                       .shape = mostly_alone,
                                       .max_iterations = 24,
                                       .suspend_probability = 0.03});
  }
  SUBCASE("the caller the only thread, every task alone, co_await next()") {
    under_every_configuration<Engine>(
        {.plans = 6, .seed = 103, .drive = Drive::next, .shape = all_alone, .max_iterations = 24});
  }
  SUBCASE("a worker, stalls and bodies resumed by another thread") {
    under_every_configuration<Engine>({.plans = 5,
                                       .seed = 107,
                                       .workers = 1,
                                       .shape = mostly_alone,
                                       .max_iterations = 24,
                                       .suspend_probability = 0.03,
                                       .stall_probability = 0.03});
  }
  SUBCASE("a worker kept busy, then free: the caller runs every task, then shares them") {
    // The caller runs every task while the worker is busy, then shares them.
    under_every_configuration<Engine>({.plans = 4,
                                       .seed = 137,
                                       .workers = 1,
                                       .shape = all_alone,
                                       .max_iterations = 160,
                                       .suspend_probability = 0.02,
                                       .busy_workers_for = 100});
  }
  SUBCASE("a worker kept busy, then free, the caller alone meanwhile") {
    // Where FastPaths::uncounted is on, the caller runs the tasks uncounted as with one thread
    // after 32 retirements without help (the alone window's thresholds set so: these bodies
    // are far longer than 250 ns), a body resumed by another thread handing over to the
    // general path (and ending the window: its iteration had help).
    const swp::test::ScopedAloneThresholds thresholds;
    under_every_configuration<Engine>({.plans = 4,
                                       .seed = 139,
                                       .workers = 1,
                                       .shape = all_alone,
                                       .max_iterations = 400,
                                       .suspend_probability = 0.002,
                                       .busy_workers_for = 300});
  }
  SUBCASE("two workers, every task alone, a second thread driving the pool") {
    under_every_configuration<Engine>({.plans = 5,
                                       .seed = 109,
                                       .workers = 2,
                                       .shape = all_alone,
                                       .max_iterations = 24,
                                       .second_driver = true});
  }
  SUBCASE("lanes on a caller's io_context, async_progress") {
    under_every_configuration<Engine>({.plans = 4,
                                       .seed = 113,
                                       .drive = Drive::asio,
                                       .shape = mostly_alone,
                                       .max_iterations = 16});
  }
  SUBCASE("sim backend, progress() and co_await next()") {
    under_every_configuration<Engine>({.plans = 4,
                                       .seed = 127,
                                       .backend = swp::Backend::sim,
                                       .shape = mostly_alone,
                                       .max_iterations = 16});
    under_every_configuration<Engine>({.plans = 4,
                                       .seed = 131,
                                       .drive = Drive::next,
                                       .backend = swp::Backend::sim,
                                       .shape = all_alone,
                                       .max_iterations = 16});
  }
}

}  // namespace test_fast_paths
