// The tensor forms of the collectives (swp/torch/tensor_collectives.hpp): a tensor's storage
// goes to the communicator as it is, with the dtype's DataType and the counts; a tensor that
// cannot be handed over as it is is refused before anything is queued. A recording
// communicator stands in for MPI.

#include "swp/torch/tensor_collectives.hpp"

#include <doctest/doctest.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "swp/async/future.hpp"
#include "swp/engine/runtime.hpp"

namespace test_tensor_collectives {

namespace {

// Records each call's buffers, counts and type; completes every operation at once.
class Recording final : public swp::Communicator {
 public:
  struct Call {
    std::string op;
    const void* send = nullptr;
    void* recv = nullptr;
    std::size_t count = 0;
    std::vector<std::size_t> send_counts, recv_counts;
    swp::DataType type{};
    std::string what;
  };
  std::vector<Call> calls;

  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 2; }
  std::string_view backend() const noexcept override { return "mpi"; }
  std::unique_ptr<swp::Communicator> split(std::span<const int>) override { return nullptr; }

 protected:
  swp::Future<void> do_all_reduce(swp::Stream&, const void* send, void* recv, std::size_t count,
                                  swp::DataType type, swp::ReduceOp, std::string_view what) override {
    return record({"all_reduce", send, recv, count, {}, {}, type, std::string(what)});
  }
  swp::Future<void> do_all_gather(swp::Stream&, const void* send, void* recv, std::size_t count,
                                  swp::DataType type, std::string_view what) override {
    return record({"all_gather", send, recv, count, {}, {}, type, std::string(what)});
  }
  swp::Future<void> do_all_to_all(swp::Stream&, const void* send, void* recv, std::size_t count,
                                  swp::DataType type, std::string_view what) override {
    return record({"all_to_all", send, recv, count, {}, {}, type, std::string(what)});
  }
  swp::Future<void> do_all_to_all_v(swp::Stream&, const void* send,
                                    std::span<const std::size_t> send_counts, void* recv,
                                    std::span<const std::size_t> recv_counts, swp::DataType type,
                                    std::string_view what) override {
    return record({"all_to_all_v", send, recv, 0, {send_counts.begin(), send_counts.end()},
                   {recv_counts.begin(), recv_counts.end()}, type, std::string(what)});
  }
  swp::Future<void> do_all_to_all_v_later(swp::Stream&, std::function<swp::AllToAllVBuffers()>,
                                          swp::DataType type, std::string_view what) override {
    return record({"all_to_all_v later", nullptr, nullptr, 0, {}, {}, type, std::string(what)});
  }
  swp::Future<void> do_send(swp::Stream&, const void* data, std::size_t count, swp::DataType type,
                            int, std::string_view what) override {
    return record({"send", data, nullptr, count, {}, {}, type, std::string(what)});
  }
  swp::Future<void> do_recv(swp::Stream&, void* data, std::size_t count, swp::DataType type, int,
                            std::string_view what) override {
    return record({"recv", nullptr, data, count, {}, {}, type, std::string(what)});
  }

 private:
  swp::Future<void> record(Call call) {
    calls.push_back(std::move(call));
    auto [promise, future] = swp::make_promise<void>();
    promise.set_value();
    return future;
  }
};

}  // namespace

TEST_CASE("tensor dtypes map to the DataTypes collectives carry, others are refused by name") {
  CHECK(swp::data_type_of(at::kByte) == swp::DataType::u8);
  CHECK(swp::data_type_of(at::kInt) == swp::DataType::i32);
  CHECK(swp::data_type_of(at::kLong) == swp::DataType::i64);
  CHECK(swp::data_type_of(at::kFloat) == swp::DataType::f32);
  CHECK(swp::data_type_of(at::kDouble) == swp::DataType::f64);
  CHECK_THROWS_WITH_AS((void)swp::data_type_of(at::kHalf), doctest::Contains("Half"),
                       std::invalid_argument);
  CHECK_THROWS_AS((void)swp::data_type_of(at::kBool), std::invalid_argument);
}

TEST_CASE("all_to_all_v hands the tensors' own storage and the counts to the communicator") {
  swp::Runtime rt;
  Recording comm;
  const at::Tensor send = at::arange(10, at::kFloat);
  const at::Tensor recv = at::empty({6}, at::kFloat);
  const std::vector<std::size_t> send_counts{4, 6}, recv_counts{3, 3};
  auto done = swp::all_to_all_v(comm, rt.stream("comm"), send, send_counts, recv, recv_counts,
                                "pooled embeddings");
  REQUIRE(comm.calls.size() == 1);
  const auto& call = comm.calls[0];
  CHECK(call.op == "all_to_all_v");
  CHECK(call.send == send.data_ptr());  // no staging copy
  CHECK(call.recv == recv.data_ptr());
  CHECK(call.send_counts == send_counts);
  CHECK(call.recv_counts == recv_counts);
  CHECK(call.type == swp::DataType::f32);
  CHECK(call.what == "pooled embeddings");
  CHECK(done.ready());
}

TEST_CASE("all_gather and all_reduce pass element counts, not bytes, and the tensors' storage") {
  swp::Runtime rt;
  Recording comm;
  const at::Tensor grads = at::ones({3, 4}, at::kDouble);
  const at::Tensor gathered = at::empty({2, 3, 4}, at::kDouble);
  (void)swp::all_gather(comm, rt.stream("comm"), grads, gathered, "dense grads");
  const at::Tensor ids = at::arange(5, at::kLong);
  const at::Tensor sum = at::empty({5}, at::kLong);
  (void)swp::all_reduce(comm, rt.stream("comm"), ids, sum, swp::ReduceOp::sum, "ids");
  REQUIRE(comm.calls.size() == 2);
  CHECK(comm.calls[0].count == 12);
  CHECK(comm.calls[0].type == swp::DataType::f64);
  CHECK(comm.calls[0].recv == gathered.data_ptr());
  CHECK(comm.calls[1].count == 5);
  CHECK(comm.calls[1].type == swp::DataType::i64);
  CHECK(comm.calls[1].send == ids.data_ptr());
}

TEST_CASE("a tensor that cannot be handed over as it is is refused before anything is queued") {
  swp::Runtime rt;
  Recording comm;
  swp::Stream& stream = rt.stream("comm");
  const at::Tensor matrix = at::zeros({4, 3}, at::kFloat);
  const std::vector<std::size_t> two{6, 6};
  SUBCASE("non-contiguous (a transpose)") {
    CHECK_THROWS_WITH_AS(
        (void)swp::all_to_all_v(comm, stream, matrix.t(), two, at::empty({12}), two, "emb"),
        doctest::Contains("all_to_all_v 'emb': the send tensor is not contiguous"),
        std::invalid_argument);
  }
  SUBCASE("undefined") {
    CHECK_THROWS_WITH_AS((void)swp::all_gather(comm, stream, at::Tensor(), matrix, "g"),
                         doctest::Contains("the send tensor is undefined"), std::invalid_argument);
  }
  SUBCASE("dtypes that differ") {
    CHECK_THROWS_WITH_AS((void)swp::all_reduce(comm, stream, matrix, at::empty({12}, at::kDouble),
                                               swp::ReduceOp::sum, "r"),
                         doctest::Contains("differ in dtype (f32 and f64)"), std::invalid_argument);
  }
  SUBCASE("counts that do not add up to the tensors") {
    const std::vector<std::size_t> short_counts{6, 5};
    CHECK_THROWS_WITH_AS(
        (void)swp::all_to_all_v(comm, stream, matrix, short_counts, at::empty({12}), two, "emb"),
        doctest::Contains("the counts must add up"), std::invalid_argument);
  }
  SUBCASE("a gather buffer of the wrong size") {
    CHECK_THROWS_WITH_AS((void)swp::all_gather(comm, stream, matrix, at::empty({13}), "g"),
                         doctest::Contains("size() x send.numel()"), std::invalid_argument);
  }
  SUBCASE("an all_reduce into its own storage") {
    CHECK_THROWS_WITH_AS(
        (void)swp::all_reduce(comm, stream, matrix, matrix.view({12}), swp::ReduceOp::sum, "r"),
        doctest::Contains("same storage"), std::invalid_argument);
  }
  SUBCASE("send and recv that overlap in part (two views of one storage)") {
    const at::Tensor flat = at::zeros({24}, at::kFloat);
    CHECK_THROWS_WITH_AS((void)swp::all_reduce(comm, stream, flat.narrow(0, 0, 12),
                                               flat.narrow(0, 6, 12), swp::ReduceOp::sum, "r"),
                         doctest::Contains("all_reduce 'r': send and recv overlap"),
                         std::invalid_argument);
    // Two ranks: recv holds 8 elements, the last 4 of them send's.
    CHECK_THROWS_WITH_AS(
        (void)swp::all_gather(comm, stream, flat.narrow(0, 20, 4), flat.narrow(0, 16, 8), "g"),
        doctest::Contains("all_gather 'g': send and recv overlap"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)swp::all_to_all_v(comm, stream, flat.narrow(0, 0, 12), two,
                                                 flat.narrow(0, 11, 12), two, "emb"),
                         doctest::Contains("all_to_all_v 'emb': send and recv overlap"),
                         std::invalid_argument);
  }
  CHECK(comm.calls.empty());
}

TEST_CASE("adjacent views of one storage are disjoint buffers: handed over as they are") {
  swp::Runtime rt;
  Recording comm;
  const at::Tensor flat = at::zeros({24}, at::kFloat);
  (void)swp::all_reduce(comm, rt.stream("comm"), flat.narrow(0, 0, 12), flat.narrow(0, 12, 12),
                        swp::ReduceOp::sum, "r");
  REQUIRE(comm.calls.size() == 1);
  CHECK(comm.calls[0].recv == flat.narrow(0, 12, 12).data_ptr());
}

}  // namespace test_tensor_collectives
