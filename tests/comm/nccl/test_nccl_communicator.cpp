// The NCCL communicator with one rank on one GPU (the multi-rank checks need several GPUs).
// Compiled where SWP_HAVE_NCCL; each test says why it skips where the machine has no usable
// GPU (CI), on stderr, and passes without checking anything.

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../../../src/comm/nccl/block_pool.hpp"
#include "../../../src/comm/nccl/nccl_wait.hpp"
#include "../../../src/comm/order_check.hpp"
#include "swp/comm/input_dist.hpp"
#include "swp/comm/nccl/nccl_communicator.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_stream.hpp"
#include "swp/engine/runtime.hpp"

namespace test_nccl_communicator {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

bool have_gpu(const char* test) {
  if (swp::CudaDevice::count() > 0) return true;
  std::fprintf(stderr, "[skip] nccl test '%s': no CUDA device on this machine\n", test);
  return false;
}

// Rank 0 of 1 on GPU 0, and a runtime on the same GPU.
struct OneRank {
  swp::Runtime rt{std::make_unique<swp::CudaDevice>(0)};
  swp::CudaDevice& device = static_cast<swp::CudaDevice&>(rt.device());
  std::unique_ptr<swp::NcclCommunicator> comm =
      swp::NcclCommunicator::init(swp::NcclUniqueId::create(), 0, 1, device);
  swp::Stream& stream = rt.stream("comm");
};

// Waits up to `limit` for `f`.
bool wait_ready(const swp::Future<void>& f, std::chrono::milliseconds limit = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!f.ready() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50us);
  return f.ready();
}

void finish(swp::Stream& s, const swp::Future<void>& f) {
  // An all_to_all_v whose counts come when it starts is issued by the communicator's issuer
  // once the work before it is done: the future first, then the stream.
  REQUIRE(wait_ready(f));
  s.synchronize();
  f.get();
}

// A device copy of `v`, freed at scope end.
template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  std::size_t n = 0;
  explicit DeviceBuffer(const std::vector<T>& v) : n(v.size()) {
    REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
    REQUIRE(cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(p); }
  std::vector<T> read() const {
    std::vector<T> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
};

}  // namespace

TEST_CASE("nccl: one rank reduces, gathers and exchanges device and host buffers") {
  if (!have_gpu("one rank")) return;
  OneRank r;
  CHECK(r.comm->rank() == 0);
  CHECK(r.comm->size() == 1);
  CHECK(r.comm->backend() == "nccl");
  std::vector<float> values(1000);
  std::iota(values.begin(), values.end(), 1.0F);
  DeviceBuffer<float> in(values), out(std::vector<float>(1000));
  finish(r.stream, r.comm->all_reduce(r.stream, std::span<const float>(in.p, in.n),
                                      std::span<float>(out.p, out.n), swp::ReduceOp::sum, "sum"));
  CHECK(out.read() == values);
  // Host buffers are staged through device memory.
  std::vector<std::int64_t> host_in{1, 2, 3}, host_out(3);
  finish(r.stream, r.comm->all_gather(r.stream, std::span<const std::int64_t>(host_in),
                                      std::span<std::int64_t>(host_out), "gather"));
  CHECK(host_out == host_in);
  std::vector<std::int64_t> a2a(3);
  finish(r.stream, r.comm->all_to_all(r.stream, std::span<const std::int64_t>(host_in),
                                      std::span<std::int64_t>(a2a), "a2a"));
  CHECK(a2a == host_in);
  const std::vector<std::size_t> counts{3};
  std::vector<std::int64_t> v(3);
  finish(r.stream, r.comm->all_to_all_v(r.stream, std::span<const std::int64_t>(host_in), counts,
                                        std::span<std::int64_t>(v), counts, "a2av"));
  CHECK(v == host_in);
}

TEST_CASE("nccl: the input distribution runs on one rank, its counts read when it starts") {
  if (!have_gpu("input dist")) return;
  OneRank r;
  swp::InputDist dist;
  dist.add_module("ebc", *r.comm).add_module("ec", *r.comm);
  auto batch = dist.start(r.stream, {{"ebc", {{{4, 5, 6}}}}, {"ec", {{{7}}}}}, "iter 0");
  for (const auto& f : batch.splits()) finish(r.stream, f);
  finish(r.stream, batch.tensors("ebc"));
  finish(r.stream, batch.tensors("ec"));
  CHECK(batch.take("ebc").values == std::vector<std::int64_t>{4, 5, 6});
  CHECK(batch.take("ec").values == std::vector<std::int64_t>{7});
}

// The tensors' receive counts come from the splits' result, which the splits staged through
// device memory into a host buffer; the GPU finishing the splits is not yet that buffer
// written. Read too early (memcheck's slower kernels showed it once in three runs on an H200),
// the counts said 0 while the send said n: NCCL wrote a self-send into a null buffer. Many
// batches of changing sizes, back to back: each must come out whole.
TEST_CASE("nccl: counts read when an exchange starts see the splits before it, batch after batch") {
  if (!have_gpu("input dist, many batches")) return;
  OneRank r;
  swp::InputDist dist;
  dist.add_module("ebc", *r.comm).add_module("ec", *r.comm);
  for (int b = 0; b < 200; ++b) {
    CAPTURE(b);
    std::vector<std::int64_t> ebc(static_cast<std::size_t>(b % 7 + 1));
    std::vector<std::int64_t> ec(static_cast<std::size_t>(b % 3));
    for (std::size_t k = 0; k < ebc.size(); ++k) ebc[k] = b * 100 + static_cast<std::int64_t>(k);
    for (std::size_t k = 0; k < ec.size(); ++k) ec[k] = -b * 100 - static_cast<std::int64_t>(k);
    auto batch = dist.start(r.stream, {{"ebc", {{ebc}}}, {"ec", {{ec}}}}, "batch");
    for (const auto& f : batch.splits()) finish(r.stream, f);
    finish(r.stream, batch.tensors("ebc"));
    finish(r.stream, batch.tensors("ec"));
    REQUIRE(batch.take("ebc").values == ebc);
    REQUIRE(batch.take("ec").values == ec);
  }
}

TEST_CASE("nccl: bootstraps from a file and from one process's devices") {
  if (!have_gpu("bootstrap")) return;
  swp::CudaDevice device(0);
  const auto path = std::filesystem::temp_directory_path() / "swp-nccl-test-id";
  std::filesystem::remove(path);
  auto from_file = swp::NcclCommunicator::from_file(path, 0, 1, device);
  CHECK(from_file->size() == 1);
  CHECK(std::filesystem::file_size(path) == 128);
  std::filesystem::remove(path);
  swp::CudaDevice* devices[] = {&device};
  auto all = swp::NcclCommunicator::for_devices(devices);
  REQUIRE(all.size() == 1);
  CHECK(all[0]->rank() == 0);
  auto half = all[0]->split_by_color(0);
  CHECK(half->size() == 1);
  const int ranks[] = {0};
  CHECK_THROWS_AS(all[0]->split(ranks), std::logic_error);
}

TEST_CASE("nccl: a stream of another backend is refused; a hang times out and aborts") {
  if (!have_gpu("errors")) return;
  OneRank r;
  swp::Runtime host;
  std::vector<float> x(4), y(4);
  CHECK_THROWS_AS(r.comm->all_reduce(host.stream("cpu"), std::span<const float>(x),
                                     std::span<float>(y), swp::ReduceOp::sum, "on the CPU"),
                  std::invalid_argument);
  // An operation that does not complete in time. One rank alone cannot make NCCL hang (a
  // send to itself without a receive is refused at once, as invalid usage), so a callable
  // holds the stream for 3 s: the all_reduce behind it stands for one waiting on a rank that
  // never takes part. Its deadline passes, the communicator is aborted, and the operation
  // fails with CommTimeout once the GPU let go of it.
  r.comm->set_timeout(300ms);
  DeviceBuffer<float> buf(x);
  r.stream.enqueue([] { std::this_thread::sleep_for(3s); });
  auto stuck = r.comm->all_reduce(r.stream, std::span<const float>(buf.p, buf.n),
                                  std::span<float>(buf.p, buf.n), swp::ReduceOp::sum, "held back");
  for (int i = 0; i < 60000 && !stuck.ready(); ++i) std::this_thread::sleep_for(1ms);
  REQUIRE(stuck.ready());
  CHECK_THROWS_WITH_AS(stuck.get(), doctest::Contains("'held back'"), swp::CommTimeout);
  auto after = r.comm->all_reduce(r.stream, std::span<const float>(buf.p, buf.n),
                                  std::span<float>(buf.p, buf.n), swp::ReduceOp::sum, "after");
  REQUIRE(after.ready());
  CHECK_THROWS_WITH_AS(after.get(), doctest::Contains("was not run: the communicator was aborted"),
                       swp::CommError);
}

TEST_CASE("nccl: abort fails the pending operation with CommAborted, and every later one at once") {
  if (!have_gpu("abort")) return;
  OneRank r;
  auto group = r.comm->split_by_color(0);  // aborts with the communicator it came from
  // As in the timeout case, a callable holds the stream: the all_reduce behind it stands for
  // one waiting on a rank that will never take part. abort() aborts NCCL's communicator on the
  // watchdog thread; the operation fails once the GPU let go of it (after the callable).
  std::vector<float> x(4);
  DeviceBuffer<float> buf(x);
  r.stream.enqueue([] { std::this_thread::sleep_for(1s); });
  auto held = r.comm->all_reduce(r.stream, std::span<const float>(buf.p, buf.n),
                                 std::span<float>(buf.p, buf.n), swp::ReduceOp::sum, "held back");
  r.comm->abort("planted failure");
  CHECK(r.comm->aborted());
  CHECK(group->aborted());
  CHECK(r.comm->abort_reason() == "rank 0 aborted: planted failure");
  auto after = r.comm->all_reduce(r.stream, std::span<const float>(buf.p, buf.n),
                                  std::span<float>(buf.p, buf.n), swp::ReduceOp::sum, "after");
  REQUIRE(after.ready());
  CHECK_THROWS_WITH_AS(after.get(),
                       "rank 0: all_reduce 'after' (4 f32) was not run: rank 0 aborted: planted "
                       "failure",
                       swp::CommAborted);
  for (int i = 0; i < 10000 && !held.ready(); ++i) std::this_thread::sleep_for(1ms);
  REQUIRE(held.ready());
  CHECK_THROWS_WITH_AS(held.get(),
                       "rank 0: all_reduce 'held back' (4 f32) failed: rank 0 aborted: planted "
                       "failure",
                       swp::CommAborted);
  r.stream.synchronize();
}

TEST_CASE("nccl: init gives up on ranks that never join: CommTimeout naming the rank and init") {
  if (!have_gpu("init timeout")) return;
  swp::CudaDevice device(0);
  // Rank 0 of 2, and rank 1 never comes.
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(
      swp::NcclCommunicator::init(swp::NcclUniqueId::create(), 0, 2, device, 500ms),
      doctest::Contains("rank 0: ncclCommInitRankConfig did not complete in 500 ms"),
      swp::CommTimeout);
  // A stale id file: rank 1 reads an id whose rank 0 is not there (this process made it and
  // listens, but never joins) and gives up instead of hanging.
  const auto path = std::filesystem::temp_directory_path() / "swp-nccl-test-stale-id";
  {
    const auto stale = swp::NcclUniqueId::create();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(stale.bytes.data(), 1, stale.bytes.size(), f) == stale.bytes.size());
    std::fclose(f);
  }
  try {
    (void)swp::NcclCommunicator::from_file(path, 1, 2, device, 500ms);
    FAIL("init with a stale id returned");
  } catch (const swp::CommTimeout& e) {
    CHECK(e.rank() == 1);
    CHECK(e.op() == "init");
  }
  std::filesystem::remove(path);
  CHECK(std::chrono::steady_clock::now() - start < 30s);  // two 500 ms deadlines, not a hang
  // The device is still usable: a one-rank communicator works after the aborted ones.
  OneRank r;
  CHECK(r.comm->size() == 1);
}

TEST_CASE("nccl: with the order check on, one rank's collectives still run and give its data") {
  if (!have_gpu("order check")) return;
  OneRank r;
  r.comm->set_order_check(true);
  std::vector<float> x{1, 2, 3, 4};
  DeviceBuffer<float> in(x), out(std::vector<float>(4, 0));
  finish(r.stream, r.comm->all_reduce(r.stream, std::span<const float>(in.p, in.n),
                                      std::span<float>(out.p, out.n), swp::ReduceOp::sum, "A"));
  CHECK(out.read() == x);
  std::vector<std::int64_t> counts{3}, got(1, 0);
  finish(r.stream, r.comm->all_gather(r.stream, std::span<const std::int64_t>(counts),
                                      std::span<std::int64_t>(got), "splits"));
  CHECK(got == counts);
}

// What follows runs without a GPU: the waits and pools the communicator is built on, with
// NCCL's answers injected.

TEST_CASE(
    "nccl: an init no rank completes gives up at its deadline, aborting, naming rank and op") {
  int aborts = 0, queries = 0;
  const auto stuck = [&](ncclResult_t* state) {
    ++queries;
    *state = ncclInProgress;  // a rank never joins
    return ncclSuccess;
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    swp::detail::await_ready(
        stuck, [&] { ++aborts; }, 3, "init", "ncclCommInitRankConfig", 50ms, start + 50ms,
        "not every one of the 4 ranks joined with this id");
    FAIL("a stuck init returned");
  } catch (const swp::CommTimeout& e) {
    CHECK(e.rank() == 3);
    CHECK(e.op() == "init");
    CHECK(std::string(e.what()) ==
          "rank 3: ncclCommInitRankConfig did not complete in 50 ms: not every one of the 4 ranks "
          "joined with this id; the communicator was aborted");
  }
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 50ms);
  CHECK(took < 20s);  // the deadline, not a hang (a generous bound for a busy machine)
  CHECK(aborts == 1);
  CHECK(queries > 1);  // polled, not waited for once
}

TEST_CASE(
    "nccl: an init or split NCCL fails is CommError with NCCL's reason; a ready one returns") {
  int aborts = 0;
  const auto failing = [](ncclResult_t* state) {
    *state = ncclSystemError;
    return ncclSuccess;
  };
  try {
    swp::detail::await_ready(
        failing, [&] { ++aborts; }, 1, "split", "ncclCommSplit", 1000ms,
        std::chrono::steady_clock::now() + 1000ms, "unused");
    FAIL("a failed split returned");
  } catch (const swp::CommTimeout&) {
    FAIL("a failure is no timeout");
  } catch (const swp::CommError& e) {
    CHECK(e.rank() == 1);
    CHECK(e.op() == "split");
    CHECK(std::string(e.what()) ==
          std::string("rank 1: ncclCommSplit failed: ") + ncclGetErrorString(ncclSystemError));
  }
  CHECK(aborts == 1);
  // In progress a few looks, then ready: no abort, no error.
  int looks = 0;
  const auto joining = [&](ncclResult_t* state) {
    *state = ++looks < 5 ? ncclInProgress : ncclSuccess;
    return ncclSuccess;
  };
  swp::detail::await_ready(
      joining, [&] { ++aborts; }, 0, "init", "ncclCommInitRankConfig", 20s,
      std::chrono::steady_clock::now() + 20s, "unused");
  CHECK(looks == 5);
  CHECK(aborts == 1);
}

TEST_CASE("nccl: an operation NCCL keeps in progress past the timeout is CommTimeout naming it") {
  const auto stuck = [](ncclResult_t* state) {
    *state = ncclInProgress;
    return ncclSuccess;
  };
  try {
    swp::detail::settle_enqueued(stuck, 2, "all_reduce", "rank 2: all_reduce 'grads' (4 f32)",
                                 30ms);
    FAIL("a stuck enqueue returned");
  } catch (const swp::CommTimeout& e) {
    CHECK(e.rank() == 2);
    CHECK(e.op() == "all_reduce");
    CHECK(std::string(e.what()) ==
          "rank 2: all_reduce 'grads' (4 f32) was not enqueued in 30 ms: NCCL kept it in "
          "progress (a rank did not take part)");
  }
  const auto broken = [](ncclResult_t* state) {
    *state = ncclRemoteError;
    return ncclSuccess;
  };
  CHECK_THROWS_WITH_AS(
      swp::detail::settle_enqueued(broken, 2, "all_reduce", "rank 2: all_reduce 'grads' (4 f32)",
                                   30ms),
      doctest::Contains("rank 2: all_reduce 'grads' (4 f32): enqueueing it failed: "),
      swp::CommError);
  // The query itself failing is reported as it said.
  const auto query_fails = [](ncclResult_t*) { return ncclInvalidArgument; };
  CHECK(swp::detail::settle(query_fails, std::chrono::steady_clock::now() + 1s) ==
        ncclInvalidArgument);
}

TEST_CASE("nccl: the order check compares each rank's call, names each on a mismatch (as MPI's)") {
  using swp::detail::check_text;
  // The rank differs between ranks by design, and so do all_to_all_v's totals: not compared.
  CHECK(check_text("rank 1: all_reduce 'grads' (4 f32)", true) == "all_reduce 'grads' (4 f32)");
  CHECK(check_text("rank 0: all_to_all_v 'InputDist ebc' (12 i64)", false) ==
        "all_to_all_v 'InputDist ebc' (i64)");
  CHECK(check_text("rank 3: all_to_all_v 'InputDist ebc' (7 i64)", false) ==
        check_text("rank 0: all_to_all_v 'InputDist ebc' (12 i64)", false));
  const auto a = swp::detail::descriptor_of(check_text("rank 0: all_reduce 'A' (1 i64)", true));
  const auto b = swp::detail::descriptor_of(check_text("rank 1: all_reduce 'B' (1 i64)", true));
  CHECK(swp::detail::same_everywhere({a, a}, a));
  CHECK_FALSE(swp::detail::same_everywhere({a, b}, a));
  CHECK(swp::detail::order_mismatch({a, b}) ==
        " was not run: the ranks called different collectives here (order check: rank 0 "
        "all_reduce 'A' (1 i64), rank 1 all_reduce 'B' (1 i64)); every rank must call them in "
        "the same order (globally ordered tasks)");
  // A description longer than the exchanged text is cut, never overflows it.
  const auto long_one = swp::detail::descriptor_of(std::string(500, 'x'));
  CHECK(std::string(long_one.text).size() == sizeof long_one.text - 1);
  // Calls that differ only past what the text holds still differ (the full text's hash), and
  // the text keeps the tail that tells them apart.
  const std::string task(110, 'T');
  const auto descriptor = [&](int rank) {
    const std::string r = std::to_string(rank);
    return swp::detail::descriptor_of(
        check_text("rank " + r + ": all_reduce '" + task + " iter " + r + "' (1 i64)", true));
  };
  const auto iter_0 = descriptor(0);
  const auto iter_1 = descriptor(1);
  CHECK_FALSE(swp::detail::same_everywhere({iter_0, iter_1}, iter_0));
  CHECK(std::string(iter_0.text).ends_with(" ... " + std::string(32, 'T') + " iter 0' (1 i64)"));
  CHECK(std::string(iter_0.text).starts_with("all_reduce 'TTT"));
}

TEST_CASE(
    "nccl: the staging pools reuse their blocks: no allocation per operation after the first") {
  std::atomic<int> made{0}, freed{0};
  std::vector<std::unique_ptr<char[]>> memory;
  {
    swp::detail::BlockPool pool(
        [&](std::size_t bytes) {
          ++made;
          memory.push_back(std::make_unique<char[]>(bytes));
          return static_cast<void*>(memory.back().get());
        },
        [&](void*) { ++freed; });
    // An operation stages a few blocks of varying size and gives them back when done; a
    // hundred of them, two in flight at a time.
    std::vector<swp::detail::BlockPool::Block> in_flight;
    for (int op = 0; op < 100; ++op) {
      in_flight.push_back(pool.take(8 * static_cast<std::size_t>(op % 5 + 1)));  // splits
      in_flight.push_back(pool.take(1000 + static_cast<std::size_t>(op % 7)));   // ids
      CHECK(in_flight.back().bytes >= 1000);
      if (in_flight.size() > 4) {  // the oldest operation finished
        pool.give(in_flight[0]);
        pool.give(in_flight[1]);
        in_flight.erase(in_flight.begin(), in_flight.begin() + 2);
      }
    }
    // Two operations' worth, made once: 2 blocks of each of the two size classes.
    CHECK(pool.allocations() == 6);
    CHECK(made == 6);
    for (const auto& b : in_flight) pool.give(b);
    CHECK(freed == 0);  // kept until the pool goes
  }
  CHECK(freed == 6);
  CHECK(swp::detail::BlockPool::class_of(1) == 256);
  CHECK(swp::detail::BlockPool::class_of(257) == 512);
  CHECK(swp::detail::BlockPool::class_of(16u << 20) == (16u << 20));
}

// On a GPU: the seed-004 split on device buffers.

TEST_CASE(
    "nccl: submitted completion: device results complete when queued, host results when there") {
  if (!have_gpu("submitted completion")) return;
  OneRank r;
  r.comm->set_completion(swp::NcclCompletion::submitted);
  CHECK(r.comm->completion() == swp::NcclCompletion::submitted);
  std::vector<float> x{1, 2, 3, 4};
  DeviceBuffer<float> in(x), out(std::vector<float>(4, 0));
  // The stream is held: the CPU sees the device result's future at once, with its event.
  std::atomic<bool> released{false};
  r.stream.enqueue([&] {
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!released.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
  });
  auto on_device = r.comm->all_reduce(r.stream, std::span<const float>(in.p, in.n),
                                      std::span<float>(out.p, out.n), swp::ReduceOp::sum, "dev");
  std::vector<std::int64_t> counts{3}, got(1, 0);
  auto to_host = r.comm->all_gather(r.stream, std::span<const std::int64_t>(counts),
                                    std::span<std::int64_t>(got), "splits");
  CHECK(on_device.ready());
  REQUIRE(on_device.event() != nullptr);
  CHECK_FALSE(on_device.event()->reached(on_device.event_generation()));
  CHECK_FALSE(to_host.ready());  // the CPU must read it: only once it is there
  released.store(true);
  // A consumer on another stream waits on the GPU for the device result.
  swp::Stream& consumer = r.rt.stream("consumer");
  consumer.wait(*on_device.event(), on_device.event_generation());
  consumer.synchronize();
  CHECK(out.read() == x);
  REQUIRE(wait_ready(to_host));
  to_host.get();
  CHECK(got == counts);
}

TEST_CASE("nccl: the input distribution on device buffers: start returns, the tensors follow") {
  if (!have_gpu("input dist on device buffers")) return;
  OneRank r;
  r.comm->set_completion(swp::NcclCompletion::submitted);
  swp::InputDist dist;
  dist.add_module("ebc", *r.comm).add_module("ec", *r.comm);
  for (int b = 0; b < 50; ++b) {
    CAPTURE(b);
    std::vector<std::int64_t> ebc(static_cast<std::size_t>(b % 7 + 1)),
        ec(static_cast<std::size_t>(b % 3));
    std::iota(ebc.begin(), ebc.end(), b * 100);
    std::iota(ec.begin(), ec.end(), -b * 100);
    DeviceBuffer<std::int64_t> ebc_in(ebc), ec_in(ec), ebc_out(std::vector<std::int64_t>(8, -1)),
        ec_out(std::vector<std::int64_t>(8, -1));
    // Held, so the splits are not there when start returns: it must not wait for them.
    std::atomic<bool> released{false};
    r.stream.enqueue([&] {
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (!released.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(100us);
    });
    auto batch =
        dist.start_on_device(r.stream,
                             {{"ebc", swp::DeviceModuleInput{ebc_in.p, {ebc.size()}, ebc_out.p, 8}},
                              {"ec", swp::DeviceModuleInput{ec_in.p, {ec.size()}, ec_out.p, 8}}},
                             "batch");
    CHECK_FALSE(batch.tensors("ebc").ready());
    released.store(true);
    for (const auto& f : batch.splits()) REQUIRE(wait_ready(f));
    const auto ebc_done = batch.tensors("ebc");
    REQUIRE(wait_ready(ebc_done));
    REQUIRE(wait_ready(batch.tensors("ec")));
    swp::Stream& main = r.rt.stream("main");
    main.wait(*ebc_done.event(), ebc_done.event_generation());
    main.synchronize();
    r.stream.synchronize();
    const auto got = batch.received("ebc");
    CHECK(got.values == ebc_out.p);
    REQUIRE(got.from_rank == std::vector<std::size_t>{ebc.size()});
    auto read = ebc_out.read();
    read.resize(ebc.size());
    CHECK(read == ebc);
    CHECK(batch.received("ec").size() == ec.size());
  }
}

// An all_to_all_v whose counts come when it starts may own its buffers through its callable
// (InputDist's batch, whose caller may drop it at once): its host result is staged through
// device memory and copied into the callable's buffer by the watchdog once the GPU finished it,
// after the issuer let go of its queue entry. The callable was destroyed with that entry: the
// copy wrote into freed memory. It is now kept until the result is delivered.
TEST_CASE("nccl: an exchange's callable, and the buffers it owns, stay until its result arrived") {
  if (!have_gpu("a deferred exchange's callable outlives its issue")) return;
  OneRank r;
  r.comm->set_timeout(10s);
  // The buffers, owned by the callable alone; what they held when they went.
  struct Owned {
    std::vector<std::int64_t> send{4, 5, 6}, recv = std::vector<std::int64_t>(3, -1);
    std::vector<std::size_t> counts{3};
    std::atomic<bool>* delivered_when_freed = nullptr;
    ~Owned() { delivered_when_freed->store(recv == send); }
  };
  std::atomic<bool> delivered_when_freed{false};
  auto owned = std::make_shared<Owned>();
  owned->delivered_when_freed = &delivered_when_freed;
  const std::weak_ptr<Owned> alive = owned;
  const auto hold = [&r](std::atomic<bool>& released) {
    r.stream.enqueue([&released] {
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (!released.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(100us);
    });
  };
  std::atomic<bool> before{false}, behind{false};
  hold(before);  // not issued until this is released
  const swp::Future<void> exchanged = r.comm->all_to_all_v(
      r.stream,
      [owned]() -> swp::AllToAllVBuffers {
        return {owned->send.data(), owned->counts, owned->recv.data(), owned->counts};
      },
      swp::DataType::i64, "owned");
  owned.reset();
  hold(behind);  // once issued, the exchange waits behind this on the GPU
  // An operation called after the exchange gets its turn once the issuer let go of the
  // exchange's queue entry.
  std::vector<std::int64_t> one{1}, sum(1, 0);
  swp::Stream& other = r.rt.stream("other");
  swp::Future<void> after;
  std::thread caller([&] {
    after = r.comm->all_reduce(other, std::span<const std::int64_t>(one),
                               std::span<std::int64_t>(sum), swp::ReduceOp::sum, "after");
  });
  before.store(true);
  caller.join();
  // Issued, its queue entry gone, the GPU held before it: its buffers must still be there.
  CHECK_FALSE(exchanged.ready());
  CHECK_FALSE(alive.expired());
  behind.store(true);
  finish(r.stream, exchanged);
  CHECK(alive.expired());  // let go of once delivered, before the future completed
  CHECK(delivered_when_freed.load());
  REQUIRE(wait_ready(after));
  after.get();
  CHECK(sum[0] == 1);
}

// InputDist hands each batch's state to keep_until_done, which let go at once on NCCL: a splits
// result staged for the host is copied after start returned, and a batch whose tensors failed
// at once (an abort arriving between the calls) and was dropped lost its state before that copy.
TEST_CASE("nccl: keep_until_done keeps an owner until the operations called before it ended") {
  if (!have_gpu("keep_until_done")) return;
  OneRank r;
  r.comm->set_timeout(10s);
  std::atomic<bool> released{false};
  r.stream.enqueue([&released] {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!released.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(100us);
  });
  struct Buffers {
    std::int64_t value = 3, sum = 0;
  };
  auto buffers = std::make_shared<Buffers>();
  const std::weak_ptr<Buffers> watched = buffers;
  const swp::Future<void> done =
      r.comm->all_reduce(r.stream, std::span<const std::int64_t>(&buffers->value, 1),
                         std::span<std::int64_t>(&buffers->sum, 1), swp::ReduceOp::sum, "kept");
  r.comm->keep_until_done(std::move(buffers));
  // Behind the held work: its result is still to be copied into the buffers.
  CHECK_FALSE(watched.expired());
  released.store(true);
  REQUIRE(wait_ready(done));
  done.get();
  // Let go of by the watchdog once it delivered the result.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!watched.expired() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50us);
  CHECK(watched.expired());
  // Nothing under way: let go of at once.
  auto idle = std::make_shared<int>(1);
  const std::weak_ptr<int> idle_watched = idle;
  r.comm->keep_until_done(std::move(idle));
  CHECK(idle_watched.expired());
}

TEST_CASE("nccl: an operation called after a waiting exchange is issued after it, in call order") {
  if (!have_gpu("call order behind a deferred exchange")) return;
  OneRank r;
  r.comm->set_timeout(10s);  // the caller's wait for its turn is bounded by twice this
  std::atomic<bool> released{false};
  r.stream.enqueue([&] {
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!released.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
  });
  swp::InputDist dist;
  dist.add_module("ebc", *r.comm);
  auto batch = dist.start(r.stream, {{"ebc", {{{1, 2, 3}}}}}, "held");
  // Another stream's all_reduce, called from another thread: it waits for the exchange to be
  // issued (the splits first), without holding the communicator.
  std::vector<std::int64_t> one{1}, sum(1, 0);
  swp::Stream& other = r.rt.stream("other");
  std::atomic<bool> called{false};
  swp::Future<void> after;
  std::thread caller([&] {
    after = r.comm->all_reduce(other, std::span<const std::int64_t>(one),
                               std::span<std::int64_t>(sum), swp::ReduceOp::sum, "after");
    called.store(true);
  });
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(called.load());  // its turn has not come: the exchange before it waits
  released.store(true);
  caller.join();
  REQUIRE(wait_ready(batch.tensors("ebc")));
  REQUIRE(wait_ready(after));
  after.get();
  CHECK(sum[0] == 1);
  CHECK(batch.take("ebc").values == std::vector<std::int64_t>{1, 2, 3});
}

}  // namespace test_nccl_communicator
