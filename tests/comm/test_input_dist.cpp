// InputDist (seed 004) in one process: a loopback communicator of one rank stands in for a
// process group, so the fusion rule (one splits collective per group, never across groups),
// the two waits and the errors are checked here; across ranks in tests/comm/mpi/.

#include <doctest/doctest.h>
#include <malloc.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "swp/comm/input_dist.hpp"
#include "swp/device/stream.hpp"
#include "swp/engine/runtime.hpp"

namespace test_input_dist {  // each test file's names apart (unity builds)

namespace {

// One rank: every collective copies send to recv, queued on the stream (so stream order
// holds), and is logged. An operation whose name contains `fail` fails with CommError.
class Loopback final : public swp::Communicator {
 public:
  std::vector<std::string> log;
  std::string fail;

  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  std::string_view backend() const noexcept override { return "loopback"; }
  std::unique_ptr<swp::Communicator> split(std::span<const int>) override { return nullptr; }
  // What keep_until_done was given (then let go of at once, as the default does).
  std::vector<std::weak_ptr<const void>> kept;
  void keep_until_done(std::shared_ptr<const void> owner) override {
    kept.push_back(owner);
    swp::Communicator::keep_until_done(std::move(owner));
  }

 protected:
  swp::Future<void> do_all_reduce(swp::Stream& s, const void* send, void* recv, std::size_t count,
                                  swp::DataType type, swp::ReduceOp,
                                  std::string_view what) override {
    return copy(s, "all_reduce", what, [=] { std::memcpy(recv, send, count * size_of(type)); });
  }
  swp::Future<void> do_all_gather(swp::Stream& s, const void* send, void* recv, std::size_t count,
                                  swp::DataType type, std::string_view what) override {
    return copy(s, "all_gather", what, [=] { std::memcpy(recv, send, count * size_of(type)); });
  }
  swp::Future<void> do_all_to_all(swp::Stream& s, const void* send, void* recv, std::size_t count,
                                  swp::DataType type, std::string_view what) override {
    return copy(s, "all_to_all", what, [=] { std::memcpy(recv, send, count * size_of(type)); });
  }
  swp::Future<void> do_all_to_all_v(swp::Stream& s, const void* send,
                                    std::span<const std::size_t> counts, void* recv,
                                    std::span<const std::size_t>, swp::DataType type,
                                    std::string_view what) override {
    const std::size_t n = total(counts);
    return copy(s, "all_to_all_v", what, [=] { std::memcpy(recv, send, n * size_of(type)); });
  }
  swp::Future<void> do_all_to_all_v_later(swp::Stream& s,
                                          std::function<swp::AllToAllVBuffers()> when_started,
                                          swp::DataType type, std::string_view what) override {
    const std::string name = std::string(what);
    return copy(s, "all_to_all_v", what, [this, when_started, type, name] {
      const swp::AllToAllVBuffers b = when_started();
      require_counts(b, name);
      std::memcpy(b.recv, b.send, total(b.send_counts) * size_of(type));
    });
  }
  swp::Future<void> do_send(swp::Stream& s, const void*, std::size_t, swp::DataType, int,
                            std::string_view what) override {
    return copy(s, "send", what, [] {});
  }
  swp::Future<void> do_recv(swp::Stream& s, void*, std::size_t, swp::DataType, int,
                            std::string_view what) override {
    return copy(s, "recv", what, [] {});
  }

 private:
  swp::Future<void> copy(swp::Stream& s, const char* op, std::string_view what,
                         std::function<void()> work) {
    const std::string name = std::string(op) + " " + std::string(what);
    log.push_back(name);
    swp::Promise<void> done;
    auto future = done.get_future();
    const bool failing = !fail.empty() && name.find(fail) != std::string::npos;
    s.enqueue([done, work = std::move(work), failing, op = std::string(op), name]() mutable {
      try {
        if (failing) throw swp::CommError(0, op, "rank 0: " + name + " failed: planted");
        work();
        done.set_value();
      } catch (...) {
        done.set_error(std::current_exception());
      }
    });
    return future;
  }
};

// Waits for `f`, which an operation queued on `s` completes.
void await_on(swp::Stream& s, const swp::Future<void>& f) {
  s.synchronize();
  f.get();
}

swp::ModuleInput ids(std::vector<std::int64_t> v) { return swp::ModuleInput{{std::move(v)}}; }

std::map<std::string, std::vector<std::int64_t>> run_batch(swp::InputDist& dist, swp::Stream& s,
                                                           const std::vector<std::string>& names) {
  std::map<std::string, swp::ModuleInput> in;
  std::int64_t next = 0;
  for (const auto& n : names) {
    std::vector<std::int64_t> v;
    for (std::int64_t k = 0; k < 3 + next % 4; ++k) v.push_back(100 * next + k);
    in[n] = ids(v);
    ++next;
  }
  auto batch = dist.start(s, in, "iter 0");
  for (const auto& f : batch.splits()) await_on(s, f);
  std::map<std::string, std::vector<std::int64_t>> out;
  for (const auto& n : names) {
    await_on(s, batch.tensors(n));
    swp::ModuleOutput o = batch.take(n);
    CHECK(o.from_rank.size() == 1);
    CHECK(o.from(0).size() == o.values.size());
    out[n] = o.values;
  }
  return out;
}

}  // namespace

TEST_CASE("input dist: the splits of a process group's modules travel in one collective") {
  swp::Runtime rt;
  swp::Stream& s = rt.stream("data_dist");
  Loopback group_a, group_b;
  swp::InputDist dist;
  dist.add_module("ebc", group_a).add_module("ec", group_a).add_module("mc", group_b);
  CHECK(dist.process_groups() == 2);
  CHECK(dist.splits_collectives() == 2);
  const auto out = run_batch(dist, s, {"ebc", "ec", "mc"});
  // One splits all_to_all per group, never across groups, before the per-module tensors.
  CHECK(group_a.log == std::vector<std::string>{"all_to_all iter 0 splits",
                                                "all_to_all_v iter 0 ebc",
                                                "all_to_all_v iter 0 ec"});
  CHECK(group_b.log ==
        std::vector<std::string>{"all_to_all iter 0 splits", "all_to_all_v iter 0 mc"});
  CHECK(out.at("ebc") == std::vector<std::int64_t>{0, 1, 2});
  CHECK(out.at("ec") == std::vector<std::int64_t>{100, 101, 102, 103});
  CHECK(out.at("mc") == std::vector<std::int64_t>{200, 201, 202, 203, 204});
}

TEST_CASE("input dist: unfused splits (one per module) give the same tensors") {
  swp::Runtime rt;
  swp::Stream& s = rt.stream("data_dist");
  Loopback fused_a, fused_b, plain_a, plain_b;
  swp::InputDist fused;
  fused.add_module("ebc", fused_a).add_module("ec", fused_a).add_module("mc", fused_b);
  swp::InputDist plain({.fuse_splits = false});
  plain.add_module("ebc", plain_a).add_module("ec", plain_a).add_module("mc", plain_b);
  CHECK(plain.splits_collectives() == 3);
  CHECK(run_batch(fused, s, {"ebc", "ec", "mc"}) == run_batch(plain, s, {"ebc", "ec", "mc"}));
  CHECK(plain_a.log.size() == 4);  // two splits, two tensors
  CHECK(plain_a.log[0] == "all_to_all iter 0 splits ebc");
}

TEST_CASE("input dist: inputs that do not fit the modules are refused naming the module") {
  swp::Runtime rt;
  swp::Stream& s = rt.stream("data_dist");
  Loopback group;
  swp::InputDist dist;
  CHECK_THROWS_WITH_AS(dist.start(s, {}, "iter 0"), "iter 0: no module was added",
                       std::invalid_argument);
  dist.add_module("ebc", group);
  CHECK_THROWS_WITH_AS(dist.add_module("ebc", group),
                       "InputDist::add_module: module 'ebc' added twice", std::invalid_argument);
  CHECK_THROWS_WITH_AS(dist.start(s, {}, "iter 0"), "iter 0: no input for module 'ebc'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(dist.start(s, {{"ebc", ids({1})}, {"ecc", ids({2})}}, "iter 0"),
                       "iter 0: an input for 'ecc', which is no module of this InputDist",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(dist.start(s, {{"ebc", swp::ModuleInput{{{1}, {2}}}}}, "iter 0"),
                       "iter 0: module 'ebc' has ids for 2 ranks; its process group has 1",
                       std::invalid_argument);
  CHECK(group.log.empty());  // nothing refused reached the communicator
}

TEST_CASE("input dist: a failed splits exchange fails wait #1 and the module's tensors") {
  swp::Runtime rt;
  swp::Stream& s = rt.stream("data_dist");
  Loopback group;
  group.fail = "splits";
  swp::InputDist dist;
  dist.add_module("ebc", group);
  auto batch = dist.start(s, {{"ebc", ids({1, 2})}}, "iter 4");
  REQUIRE(batch.splits().size() == 1);
  CHECK_THROWS_WITH_AS(await_on(s, batch.splits()[0]),
                       "rank 0: all_to_all iter 4 splits failed: planted", swp::CommError);
  CHECK_THROWS_WITH_AS(await_on(s, batch.tensors("ebc")),
                       "rank 0: all_to_all iter 4 splits failed: planted", swp::CommError);
  CHECK_THROWS_AS(static_cast<void>(batch.take("ebc")), swp::CommError);
  CHECK_THROWS_AS(static_cast<void>(batch.tensors("nope")), std::out_of_range);
}

namespace {

// Bytes the C heap has handed out and not taken back (glibc's count; 0 where the allocator is
// another, as under a sanitizer).
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

}  // namespace

TEST_CASE("input dist: a failed batch's buffers are freed once nothing can write them") {
  swp::Runtime rt;
  swp::Stream& s = rt.stream("data_dist");
  Loopback group;
  group.fail = "splits";
  swp::InputDist dist;
  dist.add_module("ebc", group);
  constexpr std::size_t ids_sent = 4u << 20;  // 32 MiB of ids, copied into the batch's buffers
  constexpr std::size_t bytes = ids_sent * sizeof(std::int64_t);
  const std::size_t before = heap_in_use();
  bool counted = false;
  {
    auto batch = dist.start(s, {{"ebc", ids(std::vector<std::int64_t>(ids_sent, 7))}}, "iter 0");
    s.synchronize();
    counted = heap_in_use() >= before + bytes;  // the batch holds its copy
    CHECK_THROWS_AS(batch.tensors("ebc").get(), swp::CommError);
    REQUIRE(group.kept.size() == 1);  // the group was given the batch's buffers to keep
  }
  // The batch handle went, its operations ran (the loopback has nothing under way once a
  // future completed): the 32 MiB are back, not kept for a transfer that cannot come.
  CHECK(group.kept.front().expired());
  if (counted) {
    CHECK(heap_in_use() < before + bytes / 2);
  } else {
    MESSAGE("the allocator is not glibc's (a sanitizer's?): the heap's bytes are not checked");
  }
}

TEST_CASE("input dist: take hands the ids over once, and only after they arrived") {
  swp::Runtime rt;
  swp::Stream& s = rt.stream("data_dist");
  Loopback group;
  swp::InputDist dist;
  dist.add_module("ebc", group);
  auto batch = dist.start(s, {{"ebc", ids({7, 8})}}, "iter 0");
  await_on(s, batch.tensors("ebc"));
  CHECK(batch.take("ebc").values == std::vector<std::int64_t>{7, 8});
  CHECK_THROWS_WITH_AS(static_cast<void>(batch.take("ebc")),
                       "InputDist batch: module 'ebc' taken twice", std::logic_error);
  swp::InputDist::Batch empty;
  CHECK_THROWS_AS((void)empty.splits(), std::logic_error);
}

TEST_CASE("input dist: device buffers: ids go from each module's buffer into its recv buffer") {
  // The loopback takes any memory: host arrays stand in for device buffers here.
  swp::Runtime rt;
  swp::Stream& s = rt.stream("data_dist");
  Loopback group;
  swp::InputDist dist;
  dist.add_module("ebc", group).add_module("ec", group);
  std::vector<std::int64_t> ebc{1, 2, 3}, ec{9}, ebc_recv(5, -1), ec_recv(1, -1);
  auto batch = dist.start_on_device(
      s,
      {{"ebc", swp::DeviceModuleInput{ebc.data(), {3}, ebc_recv.data(), ebc_recv.size()}},
       {"ec", swp::DeviceModuleInput{ec.data(), {1}, ec_recv.data(), ec_recv.size()}}},
      "iter 2");
  // The same collectives as host inputs take: one fused splits exchange, then the tensors.
  for (const auto& f : batch.splits()) await_on(s, f);
  await_on(s, batch.tensors("ebc"));
  await_on(s, batch.tensors("ec"));
  CHECK(group.log == std::vector<std::string>{"all_to_all iter 2 splits", "all_to_all_v iter 2 ebc",
                                              "all_to_all_v iter 2 ec"});
  const swp::DeviceModuleOutput got = batch.received("ebc");
  CHECK(got.values == ebc_recv.data());  // into the caller's buffer, nothing allocated
  CHECK(got.from_rank == std::vector<std::size_t>{3});
  CHECK(got.size() == 3);
  CHECK(got.from(0).first == ebc_recv.data());
  CHECK(got.from(0).second == 3);
  CHECK_THROWS_AS((void)got.from(1), std::out_of_range);
  CHECK(ebc_recv == std::vector<std::int64_t>{1, 2, 3, -1, -1});
  CHECK(ec_recv == std::vector<std::int64_t>{9});
  // Device modules are read with received(), host ones with take().
  CHECK_THROWS_WITH_AS(static_cast<void>(batch.take("ebc")),
                       doctest::Contains("received(), not take()"), std::logic_error);
  auto host = dist.start(s, {{"ebc", ids({5})}, {"ec", ids({6})}}, "iter 3");
  await_on(s, host.tensors("ebc"));
  CHECK_THROWS_WITH_AS((void)host.received("ebc"), doctest::Contains("take() hands its ids over"),
                       std::logic_error);
}

TEST_CASE(
    "input dist: a device module receiving more than its recv buffer holds fails, naming it") {
  swp::Runtime rt;
  swp::Stream& s = rt.stream("data_dist");
  Loopback group;
  swp::InputDist dist;
  dist.add_module("ebc", group);
  std::vector<std::int64_t> ebc{1, 2, 3}, small(2, -1);
  auto batch = dist.start_on_device(
      s, {{"ebc", swp::DeviceModuleInput{ebc.data(), {3}, small.data(), 2}}}, "iter 5");
  CHECK_THROWS_WITH_AS(await_on(s, batch.tensors("ebc")),
                       "module 'ebc' receives 3 ids; its recv buffer holds 2", std::runtime_error);
  CHECK(small == std::vector<std::int64_t>{-1, -1});  // nothing written past it, nothing at all
  CHECK_THROWS_AS((void)batch.received("ebc"), std::runtime_error);
  // Buffers that cannot be right are refused before anything is called.
  group.log.clear();
  CHECK_THROWS_WITH_AS(
      dist.start_on_device(s, {{"ebc", swp::DeviceModuleInput{nullptr, {3}, small.data(), 2}}},
                           "iter 6"),
      "iter 6: module 'ebc' sends 3 ids from a null ids buffer", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      dist.start_on_device(s, {{"ebc", swp::DeviceModuleInput{ebc.data(), {3}, nullptr, 4}}},
                           "iter 6"),
      "iter 6: module 'ebc' has room for 4 ids in a null recv buffer", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      dist.start_on_device(
          s, {{"ebc", swp::DeviceModuleInput{ebc.data(), {1, 2}, small.data(), 2}}}, "iter 6"),
      "iter 6: module 'ebc' has ids for 2 ranks; its process group has 1", std::invalid_argument);
  CHECK(group.log.empty());
}

}  // namespace test_input_dist
