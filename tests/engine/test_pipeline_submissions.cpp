// The push form (Pipeline::fill_submissions / submit / try_submit): every submitted batch
// reaches on_retire or on_failure exactly once, however the run ends — its end of data,
// cancel(), a task's failure, drain(), the pipeline's destruction — and the temporary form
// `co_await pipe.submit(Request{...})`. Both engines.

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "swp/async/channel.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_pipeline_submissions {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

// A request of a service: its id and a token whose use count shows who still holds it. A
// constructor, not an aggregate: g++ 12 miscompiles braced aggregate temporaries inside
// co_await (docs/building.md), and `co_await pipe.submit(Request{...})` is tested below.
struct Request {
  Request() = default;
  Request(int id, std::shared_ptr<int> token) : id(id), token(std::move(token)) {}
  int id = -1;
  std::shared_ptr<int> token;
};
using Ctx = swp::IterContext<Request>;

// What happened to each request: retired (in iteration `iter`), or failed with `why`.
struct Outcome {
  bool retired = false;
  std::int64_t iter = -2;
  std::string why;
};

struct Service {
  std::shared_ptr<int> token = std::make_shared<int>(0);
  int block_id = -1;  // Gate waits (cancellably) on `never` for this request
  int throw_id = -1;  // Gate throws for this request
  std::atomic<int> blocked{0};
  swp::Promise<int> never;
  swp::Future<int> never_done = never.get_future();
  std::mutex mutex;
  std::map<int, std::vector<Outcome>> outcomes;  // by request id

  swp::Plan<Ctx> plan() {
    swp::Plan<Ctx> plan;
    auto load = plan.add("Load", [](Ctx& ctx) { return ctx.batch.id; }, {.stage = 0});
    plan.add(
        "Gate",
        [this, load](Ctx& ctx) -> swp::Co<void> {
          const int id = co_await ctx.get(load);
          if (id == throw_id) throw std::runtime_error("bad request " + std::to_string(id));
          if (id != block_id) co_return;
          ++blocked;
          (void)co_await never_done;
        },
        {.stage = 1, .thread_group = "gate"}, swp::reads(load));
    return plan;
  }

  void watch(swp::Pipeline<Ctx>& pipe) {
    pipe.on_retire([this](const Ctx& c) {
      std::lock_guard lock(mutex);
      outcomes[c.batch.id].push_back({true, c.iter_idx, ""});
    });
    pipe.on_failure([this](const Ctx& c, const std::exception_ptr& e) {
      std::string why;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        why = x.what();
      }
      std::lock_guard lock(mutex);
      outcomes[c.batch.id].push_back({false, c.iter_idx, why});
    });
  }

  // Every id in [0, n) was accounted for exactly once; returns the never-admitted ones' count.
  int check_each_once(int n) {
    std::lock_guard lock(mutex);
    int never_admitted = 0;
    for (int id = 0; id < n; ++id) {
      CAPTURE(id);
      REQUIRE(outcomes[id].size() == 1);
      const Outcome& o = outcomes[id].front();
      if (!o.retired && o.iter == -1) ++never_admitted;
      if (o.retired) CHECK(o.iter >= 0);
    }
    CHECK(outcomes.size() == static_cast<std::size_t>(n));
    return never_admitted;
  }

  void wait_until_blocked() const {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (blocked.load() == 0) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(1ms);
    }
  }
};

template <class Engine>
std::unique_ptr<swp::Pipeline<Ctx>> make(swp::Runtime& rt, Service& service) {
  auto pipe = Engine::template make<Ctx>(rt, service.plan(), 2);
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  service.watch(*pipe);
  return pipe;
}

void submit_ids(swp::Pipeline<Ctx>& pipe, Service& service, int from, int to) {
  for (int id = from; id < to; ++id) {
    Request r(id, service.token);
    REQUIRE(pipe.try_submit(r));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("a cancelled push run hands every queued request to on_failure, then refills",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Service service;
  service.block_id = 2;
  auto pipe = make<Engine>(rt, service);
  pipe->fill_submissions(16);
  submit_ids(*pipe, service, 0, 10);
  std::thread canceller([&] {
    service.wait_until_blocked();
    CHECK(pipe->cancel("shutdown"));
  });
  CHECK_THROWS_WITH_AS(
      [&] {
        while (pipe->progress()) {
        }
      }(),
      "pipeline cancelled: shutdown", swp::Cancelled);
  canceller.join();
  // Requests past the blocked one were queued, some perhaps admitted: none is lost.
  CHECK(service.check_each_once(10) > 0);
  {
    std::lock_guard lock(service.mutex);
    for (const auto& [id, outcomes] : service.outcomes)
      if (!outcomes.front().retired) CHECK(outcomes.front().why == "pipeline cancelled: shutdown");
  }
  // The queue stays closed until the next fill: a submit is refused and keeps its request.
  Request late(99, service.token);
  CHECK_FALSE(pipe->try_submit(late));
  CHECK(late.token != nullptr);
  late = Request();
  // The next push run takes requests again; nothing of the last one is held any more.
  service.block_id = -1;
  pipe->fill_submissions(4);
  submit_ids(*pipe, service, 10, 13);
  pipe->close_submissions();
  while (pipe->progress()) {
  }
  CHECK(service.check_each_once(13) > 0);
  for (int id = 10; id < 13; ++id) CHECK(service.outcomes[id].front().retired);
  CHECK(service.token.use_count() == 1);
}

TEST_CASE_TEMPLATE("a failed push run hands its queued requests to on_failure naming the failure",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Service service;
  service.throw_id = 3;
  auto pipe = make<Engine>(rt, service);
  pipe->fill_submissions(16);
  submit_ids(*pipe, service, 0, 12);
  CHECK_THROWS_AS(
      [&] {
        while (pipe->progress()) {
        }
      }(),
      swp::TaskError);
  service.check_each_once(12);
  std::lock_guard lock(service.mutex);
  CHECK(service.outcomes[3].front().why ==
        "task 'Gate' failed in iteration 3: bad request 3");
  const std::string not_admitted =
      "batch not admitted: the run failed: task 'Gate' failed in iteration 3: bad request 3";
  int handed_back = 0;
  for (const auto& [id, outcomes] : service.outcomes) {
    if (outcomes.front().iter != -1) continue;
    ++handed_back;
    CHECK(outcomes.front().why == not_admitted);
  }
  CHECK(handed_back > 0);  // 12 queued, at most depth + 1 admitted before the failure
  CHECK(service.token.use_count() == 1);
}

TEST_CASE_TEMPLATE("drain() and destruction hand back the push form's queued requests", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Service service;
  {
    auto pipe = make<Engine>(rt, service);
    pipe->fill_submissions(16);
    submit_ids(*pipe, service, 0, 8);
    CHECK(swp::test::iter_of(pipe->progress()) == 0);
    pipe->drain();
    service.check_each_once(8);
    {
      std::lock_guard lock(service.mutex);
      CHECK(service.outcomes[7].front().why ==
            "batch not admitted: the pipeline was drained before it");
    }
    // Destroyed with requests queued: each reaches on_failure too.
    pipe->fill_submissions(16);
    submit_ids(*pipe, service, 8, 12);
  }
  service.check_each_once(12);
  CHECK(service.token.use_count() == 1);
}

TEST_CASE_TEMPLATE("co_await submit of a temporary request suspends and loses nothing", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Service service;
  auto pipe = make<Engine>(rt, service);
  pipe->fill_submissions(1);  // every other submit waits for room
  constexpr int n = 40;
  std::thread producer([&] {
    swp::sync_wait([&]() -> swp::Co<void> {
      for (int id = 0; id < n; ++id) co_await pipe->submit(Request(id, service.token));
      pipe->close_submissions();
    }());
  });
  while (pipe->progress()) {
  }
  producer.join();
  CHECK(service.check_each_once(n) == 0);
  CHECK(service.token.use_count() == 1);
}

TEST_CASE_TEMPLATE("submit of a named batch moves it once queued and leaves a refused one",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Service service;
  auto pipe = make<Engine>(rt, service);
  pipe->fill_submissions(1);
  auto submit = [&](Request& r) -> swp::Co<void> { co_await pipe->submit(r); };
  Request accepted(0, service.token);
  swp::sync_wait(submit(accepted));
  CHECK(accepted.token == nullptr);  // queued: moved from, not copied
  pipe->close_submissions();
  Request refused(1, service.token);
  CHECK_THROWS_AS(swp::sync_wait(submit(refused)), swp::ChannelClosed);
  CHECK(refused.id == 1);
  CHECK(refused.token == service.token);  // still the caller's, not destroyed
  while (pipe->progress()) {
  }
  CHECK(service.check_each_once(1) == 0);
  CHECK(service.token.use_count() == 2);  // the service's and `refused`'s
}

}  // namespace test_pipeline_submissions
