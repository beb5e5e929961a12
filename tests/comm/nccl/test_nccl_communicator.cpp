// The NCCL communicator with one rank on one GPU (the multi-rank checks need several GPUs).
// Compiled where SWP_HAVE_NCCL; each test says why it skips where the machine has no usable
// GPU (CI), on stderr, and passes without checking anything.

#include <cuda_runtime.h>
#include <doctest/doctest.h>

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

void finish(swp::Stream& s, const swp::Future<void>& f) {
  s.synchronize();
  // The watchdog completes the future shortly after the GPU did.
  for (int i = 0; i < 100000 && !f.ready(); ++i) std::this_thread::yield();
  REQUIRE(f.ready());
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

}  // namespace test_nccl_communicator
