// abort_peers_on_failure on one process: a pipeline's failed run aborts the communicators it
// was given, with the run's error as the reason (the MPI tests show it reaching other ranks:
// tests/comm/mpi/test_mpi_abort_on_failure.cpp).

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "swp/comm/abort_on_failure.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/runtime.hpp"

namespace test_abort_on_failure {  // each test file's names apart (unity builds)

namespace {

using Ctx = swp::IterContext<int>;

// One rank alone: every operation completes at once (its result is its input).
class Alone final : public swp::Communicator {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  std::string_view backend() const noexcept override { return "alone"; }
  std::unique_ptr<swp::Communicator> split(std::span<const int>) override {
    return std::make_unique<Alone>();
  }

 protected:
  swp::Future<void> do_all_reduce(swp::Stream&, const void*, void*, std::size_t, swp::DataType,
                                  swp::ReduceOp, std::string_view) override {
    return done();
  }
  swp::Future<void> do_all_gather(swp::Stream&, const void*, void*, std::size_t, swp::DataType,
                                  std::string_view) override {
    return done();
  }
  swp::Future<void> do_all_to_all(swp::Stream&, const void*, void*, std::size_t, swp::DataType,
                                  std::string_view) override {
    return done();
  }
  swp::Future<void> do_all_to_all_v(swp::Stream&, const void*, std::span<const std::size_t>, void*,
                                    std::span<const std::size_t>, swp::DataType,
                                    std::string_view) override {
    return done();
  }
  swp::Future<void> do_all_to_all_v_later(swp::Stream&, std::function<swp::AllToAllVBuffers()>,
                                          swp::DataType, std::string_view) override {
    return done();
  }
  swp::Future<void> do_send(swp::Stream&, const void*, std::size_t, swp::DataType, int,
                            std::string_view) override {
    return done();
  }
  swp::Future<void> do_recv(swp::Stream&, void*, std::size_t, swp::DataType, int,
                            std::string_view) override {
    return done();
  }

 private:
  static swp::Future<void> done() {
    swp::Promise<void> p;
    p.set_value();
    return p.get_future();
  }
};

// "Forward" all_reduces one value per iteration on `comm`; `fail(iter)` runs before.
swp::Plan<Ctx> forward_plan(swp::Communicator& comm, std::function<void(std::int64_t)> fail) {
  swp::Plan<Ctx> plan;
  plan.add(
      "Forward", [&comm, fail = std::move(fail)](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
        fail(ctx.iter_idx);
        std::int64_t value = ctx.iter_idx, sum = 0;
        co_await comm.all_reduce(scope.stream(), std::span<const std::int64_t>(&value, 1),
                                 std::span<std::int64_t>(&sum, 1), swp::ReduceOp::sum, "Forward");
      });
  return plan;
}

}  // namespace

static_assert(swp::ReportsRunFailures<swp::DataFlowPipeline<Ctx>>);
static_assert(!swp::ReportsRunFailures<Alone>);

TEST_CASE("abort_peers_on_failure: a task's failure aborts the communicators with its error") {
  Alone world, other;
  swp::Runtime rt;
  swp::DataFlowPipeline<Ctx> pipe(rt,
                                  forward_plan(world,
                                               [](std::int64_t iter) {
                                                 if (iter == 2)
                                                   throw std::runtime_error("corrupt record");
                                               }),
                                  2);
  swp::abort_peers_on_failure(pipe, world, other);
  std::vector<int> batches(5);
  CHECK_THROWS_AS(pipe.run(batches), swp::TaskError);
  const std::string reason = "rank 0 aborted: task 'Forward' failed in iteration 2: corrupt record";
  CHECK(world.abort_reason() == reason);
  CHECK(other.abort_reason() == reason);
}

TEST_CASE("abort_peers_on_failure: a run that succeeds aborts nothing; a cancelled one aborts") {
  Alone world;
  swp::Runtime rt;
  swp::DataFlowPipeline<Ctx>* self = nullptr;
  swp::DataFlowPipeline<Ctx> pipe(rt,
                                  forward_plan(world,
                                               [&](std::int64_t iter) {
                                                 if (iter == 7) self->cancel("SIGTERM");
                                               }),
                                  2);
  self = &pipe;
  swp::abort_peers_on_failure(pipe, world);
  std::vector<int> batches(5);
  CHECK(pipe.run(batches).iterations == 5);
  CHECK_FALSE(world.aborted());
  std::vector<int> more(5);  // iterations 5 .. 9: cancelled in 7
  CHECK_THROWS_AS(pipe.run(more), swp::Cancelled);
  CHECK(world.aborted());
  CHECK(world.abort_reason().find("rank 0 aborted: pipeline cancelled: SIGTERM") == 0);
}

}  // namespace test_abort_on_failure
