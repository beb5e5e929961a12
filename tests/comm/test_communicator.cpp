// The Communicator seam without a backend: element types, and the typed forms' checks and
// the counts they pass on (a recording communicator stands in for MPI/NCCL).

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "swp/comm/communicator.hpp"
#include "swp/engine/runtime.hpp"

namespace test_communicator {  // each test file's names apart (unity builds)

namespace {

// Records the raw calls; completes every operation at once.
class Recording final : public swp::Communicator {
 public:
  explicit Recording(int size) : size_(size) {}
  struct Call {
    std::string op;
    std::size_t count;
    swp::DataType type;
    std::string what;
  };
  std::vector<Call> calls;

  int rank() const noexcept override { return 1; }
  int size() const noexcept override { return size_; }
  std::string_view backend() const noexcept override { return "recording"; }
  swp::Future<void> do_all_reduce(swp::Stream&, const void*, void*, std::size_t count,
                                  swp::DataType type, swp::ReduceOp,
                                  std::string_view what) override {
    return record("all_reduce", count, type, what);
  }
  swp::Future<void> do_all_gather(swp::Stream&, const void*, void*, std::size_t count,
                                  swp::DataType type, std::string_view what) override {
    return record("all_gather", count, type, what);
  }
  swp::Future<void> do_all_to_all(swp::Stream&, const void*, void*, std::size_t count,
                                  swp::DataType type, std::string_view what) override {
    return record("all_to_all", count, type, what);
  }
  swp::Future<void> do_all_to_all_v(swp::Stream&, const void*, std::span<const std::size_t> counts,
                                    void*, std::span<const std::size_t>, swp::DataType type,
                                    std::string_view what) override {
    return record("all_to_all_v", total(counts), type, what);
  }
  swp::Future<void> do_all_to_all_v_later(swp::Stream&,
                                          std::function<swp::AllToAllVBuffers()> when_started,
                                          swp::DataType type, std::string_view what) override {
    const swp::AllToAllVBuffers buffers = when_started();
    return record("all_to_all_v later", total(buffers.send_counts), type, what);
  }
  swp::Future<void> do_send(swp::Stream&, const void*, std::size_t count, swp::DataType type, int,
                            std::string_view what) override {
    return record("send", count, type, what);
  }
  swp::Future<void> do_recv(swp::Stream&, void*, std::size_t count, swp::DataType type, int,
                            std::string_view what) override {
    return record("recv", count, type, what);
  }
  std::unique_ptr<swp::Communicator> split(std::span<const int>) override { return nullptr; }
  std::string name(std::string_view op, std::string_view what, std::size_t n,
                   swp::DataType type) const {
    return describe(op, what, n, type);
  }

 private:
  swp::Future<void> record(const char* op, std::size_t count, swp::DataType type,
                           std::string_view what) {
    calls.push_back({op, count, type, std::string(what)});
    swp::Promise<void> done;
    done.set_value();
    return done.get_future();
  }
  int size_;
};

}  // namespace

TEST_CASE("communicator: element types and their sizes") {
  static_assert(swp::data_type_of<float>() == swp::DataType::f32);
  static_assert(swp::data_type_of<const double>() == swp::DataType::f64);
  static_assert(swp::data_type_of<std::int32_t>() == swp::DataType::i32);
  static_assert(swp::data_type_of<std::int64_t>() == swp::DataType::i64);
  static_assert(swp::data_type_of<std::byte>() == swp::DataType::u8);
  CHECK(swp::size_of(swp::DataType::u8) == 1);
  CHECK(swp::size_of(swp::DataType::f32) == 4);
  CHECK(swp::size_of(swp::DataType::i64) == 8);
  CHECK(swp::name_of(swp::DataType::f64) == "f64");
}

TEST_CASE("communicator: typed forms pass the right counts and refuse buffers that do not fit") {
  Recording comm(4);
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Stream& s = rt.stream("comm");
  std::vector<float> eight(8), two(2), thirty_two(32);
  comm.all_reduce(s, std::span<const float>(eight), std::span<float>(eight), swp::ReduceOp::sum,
                  "Backward")
      .get();
  comm.all_gather(s, std::span<const float>(two), std::span<float>(eight)).get();
  comm.all_to_all(s, std::span<const float>(eight), std::span<float>(eight)).get();
  const std::vector<std::size_t> counts{1, 2, 3, 2};
  comm.all_to_all_v(s, std::span<const float>(eight), counts, std::span<float>(eight), counts)
      .get();
  int started = 0;
  comm.all_to_all_v(
          s,
          [&] {
            ++started;
            return swp::AllToAllVBuffers{eight.data(), {2, 2, 2, 2}, eight.data(), {2, 2, 2, 2}};
          },
          swp::DataType::f32, "splits")
      .get();
  CHECK(started == 1);
  REQUIRE(comm.calls.size() == 5);
  CHECK(comm.calls[4].op == "all_to_all_v later");
  CHECK(comm.calls[4].count == 8);
  comm.calls.pop_back();
  CHECK(comm.calls[0].op == "all_reduce");
  CHECK(comm.calls[0].count == 8);
  CHECK(comm.calls[0].type == swp::DataType::f32);
  CHECK(comm.calls[0].what == "Backward");
  CHECK(comm.calls[1].count == 2);  // per rank
  CHECK(comm.calls[2].count == 2);  // per rank: 8 / 4
  CHECK(comm.calls[3].count == 8);

  CHECK_THROWS_WITH_AS(comm.all_reduce(s, std::span<const float>(eight), std::span<float>(two),
                                       swp::ReduceOp::sum, "Backward"),
                       "rank 1: all_reduce 'Backward': recv must be as large as send",
                       std::invalid_argument);
  CHECK_THROWS_AS(comm.all_gather(s, std::span<const float>(two), std::span<float>(two)),
                  std::invalid_argument);
  std::vector<float> six(6);
  CHECK_THROWS_AS(comm.all_to_all(s, std::span<const float>(six), std::span<float>(six)),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      comm.all_to_all_v(s, std::span<const float>(six), counts, std::span<float>(eight), counts),
      std::invalid_argument);
  CHECK(comm.calls.size() == 4);  // nothing refused reached the backend
  CHECK(comm.name("all_to_all_v", "InputDist", 12, swp::DataType::i64) ==
        "rank 1: all_to_all_v 'InputDist' (12 i64)");
}

TEST_CASE("communicator: the timeout is the communicator's, 60 s unless set") {
  Recording comm(2);
  CHECK(comm.timeout() == std::chrono::seconds(60));
  comm.set_timeout(std::chrono::milliseconds(250));
  CHECK(comm.timeout() == std::chrono::milliseconds(250));
}

TEST_CASE("communicator: keep_until_done lets go at once where nothing outlives its future") {
  Recording comm(2);
  auto owner = std::make_shared<std::vector<std::int64_t>>(1024);
  const std::weak_ptr<std::vector<std::int64_t>> watched = owner;
  comm.keep_until_done(std::move(owner));
  CHECK(watched.expired());
  comm.keep_until_done(nullptr);  // nothing to keep: nothing happens
}

TEST_CASE("communicator: the order check is off unless set") {
  Recording comm(2);
  CHECK_FALSE(comm.order_check());
  comm.set_order_check(true);
  CHECK(comm.order_check());
}

TEST_CASE("communicator: after abort every operation fails at once, naming who aborted and why") {
  Recording comm(4);
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Stream& s = rt.stream("comm");
  CHECK_FALSE(comm.aborted());
  CHECK(comm.abort_reason().empty());
  comm.abort("task 'Forward' failed in iteration 7: corrupt record");
  CHECK(comm.aborted());
  CHECK(comm.abort_reason() ==
        "rank 1 aborted: task 'Forward' failed in iteration 7: corrupt record");
  comm.abort("a later failure");  // the first abort wins
  CHECK(comm.abort_reason() ==
        "rank 1 aborted: task 'Forward' failed in iteration 7: corrupt record");
  std::vector<float> eight(8);
  const std::vector<std::size_t> counts{2, 2, 2, 2};
  const std::vector<swp::Future<void>> refused{
      comm.all_reduce(s, std::span<const float>(eight), std::span<float>(eight), swp::ReduceOp::sum,
                      "Backward"),
      comm.all_gather(s, std::span<const float>(eight.data(), 2), std::span<float>(eight)),
      comm.all_to_all(s, std::span<const float>(eight), std::span<float>(eight)),
      comm.all_to_all_v(s, std::span<const float>(eight), counts, std::span<float>(eight), counts),
      comm.all_to_all_v(
          s, [] { return swp::AllToAllVBuffers{}; }, swp::DataType::f32, "splits"),
      comm.send(s, std::span<const float>(eight), 2),
      comm.recv(s, std::span<float>(eight), 2)};
  CHECK(comm.calls.empty());  // none reached the backend
  for (const swp::Future<void>& f : refused) {
    REQUIRE(f.ready());
    CHECK_THROWS_AS(f.get(), swp::CommAborted);
  }
  try {
    refused[0].get();
  } catch (const swp::CommAborted& e) {
    CHECK(e.rank() == 1);
    CHECK(e.op() == "all_reduce");
    CHECK(e.aborting_rank() == 1);
    CHECK(e.reason() == "task 'Forward' failed in iteration 7: corrupt record");
    CHECK(std::string(e.what()) ==
          "rank 1: all_reduce 'Backward' (8 f32) was not run: rank 1 aborted: task 'Forward' "
          "failed in iteration 7: corrupt record");
  }
}

}  // namespace test_communicator
