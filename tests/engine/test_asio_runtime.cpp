// AsioRuntime: a pipeline whose lanes run on the caller's io_context, driven by async_progress
// and fed by async_submit, with results carried by the completion (swp::Retired).

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "swp/engine/asio.hpp"
#include "swp/engine/asio_runtime.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_asio_runtime {  // each test file's names apart (unity builds)

namespace {

struct Fields {
  int square = 0;
};
using Ctx = swp::IterContext<int, Fields>;

swp::Plan<Ctx> square_plan() {
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx& ctx) { return ctx.batch; }, {.stage = 0});
  plan.add(
      "Square",
      [load](Ctx& ctx) -> swp::Co<void> {
        const int v = co_await ctx.get(load);
        ctx.square = v * v;
      },
      {.stage = 1, .thread_group = "compute"}, swp::reads(load));
  return plan;
}

}  // namespace

TEST_CASE(
    "AsioRuntime runs a pipeline on the caller's io_context threads, fed and driven by Asio") {
  boost::asio::io_context io;
  swp::AsioRuntime rt(io.get_executor());
  CHECK(rt.executor() == boost::asio::any_io_executor(io.get_executor()));
  swp::DataFlowPipeline<Ctx> pipe(rt, square_plan(), 3);
  pipe.fill_submissions(4);
  constexpr int count = 40;

  // The producer: one submit after the other (back-pressure: each completes once queued).
  std::function<void(int)> produce = [&](int b) {
    if (b > count) return pipe.close_submissions();
    swp::async_submit(pipe, b, [&, b](std::exception_ptr e) {
      REQUIRE_FALSE(e);
      produce(b + 1);
    });
  };
  // The driver: each step's completion carries the retired iteration's context.
  std::mutex mutex;
  std::vector<std::pair<int, int>> answered;  // (batch, square)
  std::exception_ptr failure;
  std::function<void(std::exception_ptr, std::optional<swp::Retired<Ctx>>)> drive =
      [&](std::exception_ptr e, std::optional<swp::Retired<Ctx>> r) {
        if (e) {
          failure = e;
          return;
        }
        if (!r) return;  // submissions closed and all retired
        {
          std::lock_guard lock(mutex);
          answered.emplace_back(r->context().batch, r->context().square);
        }
        swp::async_progress(pipe, drive);
      };
  boost::asio::post(io, [&] {
    produce(1);
    swp::async_progress(pipe, drive);
  });
  std::thread second([&] { io.run(); });
  io.run();
  second.join();
  if (failure) std::rethrow_exception(failure);
  REQUIRE(answered.size() == count);
  for (int b = 1; b <= count; ++b)
    CHECK(answered[static_cast<std::size_t>(b - 1)] == std::pair{b, b * b});
  pipe.drain();
}

TEST_CASE("AsioRuntime refuses the sim backend, which needs its own scheduler") {
  boost::asio::io_context io;
  CHECK_THROWS_AS(swp::AsioRuntime(io.get_executor(), {.backend = swp::Backend::sim}),
                  std::invalid_argument);
}

}  // namespace test_asio_runtime
