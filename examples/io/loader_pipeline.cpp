// The data loader feeding a training-style pipeline: generate a dataset of record files, load
// it (shuffled, read ahead asynchronously, verified on a decode thread) into an H2D -> compute
// pipeline, and print `metric` lines. Every record must arrive exactly once per epoch (exit 1
// otherwise). On host streams by default; on the GPU where the CUDA backend is compiled in and
// a GPU is present (H2D is cudaMemcpyAsync from the loader's pinned batch buffer into device
// memory, and compute reads the records back from the device).
//
//   loader_pipeline [--records N] [--bytes B] [--epochs E] [--dir DIR] [--backend host|cuda]
//
// A bad flag exits 1 with one `error:` line naming it (--help lists the flags and defaults).

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "swp/config.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/task_scope.hpp"
#include "swp/io.hpp"

#if SWP_HAVE_CUDA
#include <cuda_runtime.h>

#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_stream.hpp"
#endif

namespace {

struct Fields {
  std::vector<std::byte> device;  // the batch as compute reads it (host streams: the copy)
  void* gpu = nullptr;            // cuda: the batch in device memory (freed after compute)
  std::uint64_t checksum = 0;
};
using Ctx = swp::IterContext<swp::io::Batch, Fields>;

struct Tally {
  std::mutex mutex;
  std::vector<int> seen;  // per record: times computed on this epoch
  std::uint64_t checksum = 0;
};

// Checks and tallies the batch in ctx.device: every record's id and a checksum of its words.
void tally_batch(Ctx& ctx, Tally& tally) {
  std::uint64_t sum = 0;
  std::size_t at = 0;
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < ctx.batch.size(); ++i) {
    const std::size_t length = ctx.batch.record(i).size();
    const std::byte* p = ctx.device.data() + at + swp::io::frame_header_bytes;
    std::uint64_t word = 0;
    std::memcpy(&word, p, sizeof word);
    ids.push_back(word);
    for (std::size_t w = 0; w + 8 <= length; w += 8) {
      std::memcpy(&word, p + w, sizeof word);
      sum ^= word + 0x9e3779b97f4a7c15ULL + (sum << 6) + (sum >> 2);
    }
    at += swp::io::frame_bytes(length);
  }
  ctx.checksum = sum;
  std::lock_guard lock(tally.mutex);
  for (auto id : ids) tally.seen.at(id) += 1;
  tally.checksum ^= sum;
}

#if SWP_HAVE_CUDA
void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(rc));
}

// On the GPU: H2D copies the pinned batch into device memory on the memcpy stream; compute,
// on its stream (after H2D: the engine makes it wait for H2D's event on the GPU), copies it
// back and checks it on the host once there.
swp::Plan<Ctx> make_gpu_plan(Tally& tally) {
  swp::Plan<Ctx> plan;
  auto h2d = plan.add(
      "H2D",
      [](Ctx& ctx, swp::TaskScope& task) {
        cudaStream_t s = swp::as_cuda(task.stream())->native_handle();
        const auto bytes = ctx.batch.bytes();
        check(cudaMallocAsync(&ctx.gpu, bytes.size(), s), "cudaMallocAsync");
        check(cudaMemcpyAsync(ctx.gpu, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, s),
              "cudaMemcpyAsync H2D");
      },
      {.stage = 0, .stream = "memcpy"});
  auto compute = plan.add(
      "Compute",
      [&tally](Ctx& ctx, swp::TaskScope& task) {
        cudaStream_t s = swp::as_cuda(task.stream())->native_handle();
        const auto bytes = ctx.batch.bytes();
        ctx.device.resize(bytes.size());
        check(cudaMemcpyAsync(ctx.device.data(), ctx.gpu, bytes.size(), cudaMemcpyDeviceToHost, s),
              "cudaMemcpyAsync D2H");
        check(cudaFreeAsync(ctx.gpu, s), "cudaFreeAsync");
        task.enqueue([&ctx, &tally] { tally_batch(ctx, tally); });
      },
      {.stage = 1, .stream = "compute", .thread_group = "compute"});
  plan.intra_iter_deps = {{compute, h2d}};
  return plan;
}
#endif

swp::Plan<Ctx> make_plan(Tally& tally) {
  swp::Plan<Ctx> plan;
  // H2D: the whole batch buffer in one copy on the memcpy stream (cudaMemcpyAsync from the
  // loader's pinned buffer, on the cuda backend).
  auto h2d = plan.add("H2D",
                      [](Ctx& ctx, swp::TaskScope& task) {
                        task.enqueue([&ctx] {
                          const auto bytes = ctx.batch.bytes();
                          ctx.device.assign(bytes.begin(), bytes.end());
                        });
                      },
                      {.stage = 0, .stream = "memcpy"});
  // Compute: reads every record from the device copy (the engine orders it after H2D).
  auto compute = plan.add("Compute",
                          [&tally](Ctx& ctx, swp::TaskScope& task) {
                            task.enqueue([&ctx, &tally] { tally_batch(ctx, tally); });
                          },
                          {.stage = 1, .stream = "compute", .thread_group = "compute"});
  plan.intra_iter_deps = {{compute, h2d}};
  return plan;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"The data loader feeding an H2D -> compute pipeline (docs/io.md).",
               "loader_pipeline"};
  std::uint64_t records = 4096, bytes = 16384, epochs = 2;
  std::string dir_flag;
  std::string backend;  // default: cuda where it is compiled in and a GPU is present
  // At least one record in each of the dataset's 4 files.
  app.add_option("--records", records, "records in the dataset")
      ->check(examples::integer_in(4, 1'000'000'000));
  app.add_option("--bytes", bytes, "payload bytes per record")
      ->check(examples::integer_in(8, 1 << 30));
  app.add_option("--epochs", epochs, "epochs to run")->check(examples::integer_in(0, 1'000'000));
  app.add_option("--dir", dir_flag,
                 "where to write the dataset; default: a temporary directory removed at the end");
  app.add_option("--backend", backend,
                 "host, or cuda (the default where it is compiled in and a GPU is present)")
      ->check(CLI::IsMember({"host", "cuda"}));
  if (const auto exit_code = examples::parse(app, argc, argv, 1)) return *exit_code;
  std::filesystem::path dir(dir_flag);
#if SWP_HAVE_CUDA
  if (backend.empty()) backend = swp::CudaDevice::count() > 0 ? "cuda" : "host";
#else
  if (backend.empty()) backend = "host";
#endif
#if !SWP_HAVE_CUDA
  if (backend == "cuda") throw std::invalid_argument("--backend cuda: not compiled in");
#endif
  const bool temporary = dir.empty();
  if (temporary)
    dir = std::filesystem::temp_directory_path() /
          ("swp-loader-example-" + std::to_string(::getpid()));
  // A dataset of its own is removed however the run ends (an error too).
  struct RemoveAtExit {
    const std::filesystem::path* dir;
    ~RemoveAtExit() {
      std::error_code ignored;
      if (dir != nullptr) std::filesystem::remove_all(*dir, ignored);
    }
  } remove_at_exit{temporary ? &dir : nullptr};

  {
    swp::io::ProgressMeter meter("generate", records, records * bytes);
    swp::io::generate_dataset(dir, {.records = records, .bytes = bytes, .files = 4},
                              [&](std::uint64_t n) { meter.update(n, n * bytes); });
    meter.finish();
  }
  auto loader = swp::io::Loader::open_dir(
      dir, {.name = "example", .batch_records = 32, .shuffle = true, .seed = 2026});
  std::printf("# %llu records of %llu bytes in %s, reader %s, %llu batches per epoch, %s\n",
              static_cast<unsigned long long>(records), static_cast<unsigned long long>(bytes),
              dir.c_str(), swp::io::to_string(loader.reader()),
              static_cast<unsigned long long>(loader.batches_per_epoch()), backend.c_str());

  Tally tally;
#if SWP_HAVE_CUDA
  const bool gpu = backend == "cuda";
  auto runtime = gpu ? std::make_unique<swp::Runtime>(std::make_unique<swp::CudaDevice>(0),
                                                      swp::RuntimeOptions{.workers = 2})
                     : std::make_unique<swp::Runtime>(
                           swp::RuntimeOptions{.backend = swp::Backend::host, .workers = 2});
  swp::DataFlowPipeline<Ctx> pipe(*runtime, gpu ? make_gpu_plan(tally) : make_plan(tally), 3);
#else
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  swp::DataFlowPipeline<Ctx> pipe(rt, make_plan(tally), 3);
#endif
  bool complete = true;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t iterations = 0;
  for (std::uint64_t epoch = 0; epoch < epochs; ++epoch) {
    tally.seen.assign(records, 0);
    swp::io::ProgressMeter meter("epoch " + std::to_string(epoch), loader.records_per_epoch(),
                                 loader.dataset_bytes());
    pipe.fill_pipeline(loader);
    while (pipe.progress()) {
      ++iterations;
      const auto s = loader.stats();
      meter.update(s.records - epoch * loader.records_per_epoch(),
                   s.payload_bytes - epoch * loader.dataset_bytes());
    }
    pipe.synchronize();
    meter.finish();
    for (int n : tally.seen) complete = complete && n == 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto s = loader.stats();
  std::printf("metric epochs %llu count\n", static_cast<unsigned long long>(epochs));
  std::printf("metric records_per_s %.0f records/s\n", static_cast<double>(s.records) / seconds);
  std::printf("metric pipeline_mb_per_s %.1f MB/s\n",
              static_cast<double>(s.payload_bytes) / seconds / 1e6);
  std::printf("metric us_per_iter %.1f us\n", seconds * 1e6 / static_cast<double>(iterations));
  std::printf("metric stall_us_per_batch %.1f us\n", s.stall_us_per_batch());
  std::printf("metric peak_prefetched_batches %zu count\n", s.peak_prefetched_batches);
  std::printf("metric every_record_once %d bool\n", complete ? 1 : 0);
  if (!complete) {
    std::fprintf(stderr, "error: some record was not computed exactly once per epoch\n");
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
