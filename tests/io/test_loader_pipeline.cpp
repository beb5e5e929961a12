// The loader as a pipeline source: `pipe.fill_pipeline(loader)` feeds an H2D -> compute
// pipeline on host streams, every record once per epoch; a loader error fails the run as
// CallbackError nesting LoaderError after the drain, and the pipeline can be filled again.
// Both engines, both readers.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "support/loader_rig.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/engine/task_scope.hpp"
#include "swp/io/loader.hpp"
#include "swp/io/record_file.hpp"

namespace test_loader_pipeline {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using swp::test::Dataset;

struct Fields {
  std::vector<std::byte> device;  // the "device" copy of the batch (host streams)
  std::vector<std::uint64_t> ids;
};
using Ctx = swp::IterContext<swp::io::Batch, Fields>;

struct Seen {
  std::mutex mutex;
  std::vector<std::uint64_t> ids;
};

// H2D copies the batch's bytes on the memcpy stream; Compute, on the compute stream (ordered
// after H2D by the engine's stream wait), reads the ids from the copy.
swp::Plan<Ctx> plan(Seen& seen) {
  swp::Plan<Ctx> plan;
  auto h2d = plan.add("H2D",
                      [](Ctx& ctx, swp::TaskScope& task) {
                        task.enqueue([&ctx] {
                          const auto bytes = ctx.batch.bytes();
                          ctx.device.assign(bytes.begin(), bytes.end());
                        });
                      },
                      {.stage = 0, .stream = "memcpy"});
  auto compute = plan.add(
      "Compute",
      [&seen](Ctx& ctx, swp::TaskScope& task) {
        task.enqueue([&ctx, &seen] {
          ctx.ids.clear();
          std::size_t at = 0;
          for (std::size_t i = 0; i < ctx.batch.size(); ++i) {
            const auto length = ctx.batch.record(i).size();
            std::uint64_t id = 0;
            std::memcpy(&id, ctx.device.data() + at + swp::io::frame_header_bytes, sizeof id);
            ctx.ids.push_back(id);
            at += swp::io::frame_bytes(length);
          }
          std::lock_guard lock(seen.mutex);
          seen.ids.insert(seen.ids.end(), ctx.ids.begin(), ctx.ids.end());
        });
      },
      {.stage = 1, .stream = "compute", .thread_group = "compute"});
  plan.intra_iter_deps = {{compute, h2d}};
  return plan;
}

template <class E, class R>
struct Combo {
  using Engine = E;
  using Reader = R;
};
#define SWP_LOADER_COMBOS                                 \
  Combo<swp::test::UseClock, swp::test::UseUring>,        \
      Combo<swp::test::UseClock, swp::test::UsePread>,    \
      Combo<swp::test::UseDataFlow, swp::test::UseUring>, \
      Combo<swp::test::UseDataFlow, swp::test::UsePread>

std::vector<std::uint64_t> sorted(std::vector<std::uint64_t> v) {
  std::ranges::sort(v);
  return v;
}

std::vector<std::uint64_t> iota(std::uint64_t n) {
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

TEST_CASE_TEMPLATE("a loader feeds a pipeline every record once per epoch", C, SWP_LOADER_COMBOS) {
  const Dataset data({.records = 150, .bytes = 200, .files = 3, .seed = 8});
  auto loader = swp::test::open_loader<typename C::Reader>(
      data.files, {.batch_records = 16, .shuffle = true, .seed = 5});
  if (!loader) return;
  Seen seen;
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  auto pipe = C::Engine::template make<Ctx>(rt, plan(seen), 3);
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    pipe->fill_pipeline(*loader);
    std::int64_t retired = 0;
    while (pipe->progress()) ++retired;
    pipe->synchronize();
    CHECK(retired == 10);
    std::lock_guard lock(seen.mutex);
    CHECK(sorted(seen.ids) == iota(150));
    seen.ids.clear();
  }
  CHECK(loader->epoch() == 2);
}

TEST_CASE_TEMPLATE("a loader error fails the run naming the loader; the pipeline refills", C,
                   SWP_LOADER_COMBOS) {
  const Dataset data({.records = 80, .bytes = 64, .files = 2, .seed = 8});
  std::optional<swp::io::Loader> bad;
  std::string why;
  SUBCASE("a decode error") {
    bad = swp::test::open_loader<typename C::Reader>(
        data.files, {.name = "bad-loader", .batch_records = 8, .decode = [](swp::io::Batch& b) {
                       if (b.number() == 4) throw std::runtime_error("batch 4 is bad");
                     }});
    why = "batch 4 is bad";
  }
  SUBCASE("a read error") {
    bad = swp::test::open_loader<typename C::Reader>(data.files,
                                                     {.name = "bad-loader", .batch_records = 8});
    // After the loader opened the files: file 1 (records 40..79) ends inside record 72.
    const std::uint64_t cut = swp::io::RecordFile(data.files[1]).entry(32).offset + 20;
    std::filesystem::resize_file(data.files[1], cut);
    why = data.files[1].string() + " at offset " + std::to_string(cut) + ": truncated";
  }
  if (!bad) return;
  Seen seen;
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  auto pipe = C::Engine::template make<Ctx>(rt, plan(seen), 3);
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  pipe->fill_pipeline(*bad);
  std::int64_t retired = 0;
  try {
    while (pipe->progress()) ++retired;
    FAIL("the run did not fail");
  } catch (const swp::CallbackError& e) {
    CHECK(e.callback() == swp::CallbackError::Callback::source);
    try {
      std::rethrow_exception(e.nested());
    } catch (const swp::io::LoaderError& le) {
      CHECK(le.loader() == "bad-loader");
      CHECK(std::string(le.what()).find(why) != std::string::npos);
    }
  }
  const std::uint64_t failing = why.starts_with("batch") ? 4 : 9;  // record 72 is in batch 9
  CHECK(retired <= static_cast<std::int64_t>(failing));
  CHECK(bad->stats().reads_in_flight == 0);
  CHECK(bad->stats().batches == failing);  // the batches before went in; the failing one never did
  // The pipeline is usable again: a good loader runs to the end.
  const Dataset fresh({.records = 80, .bytes = 64, .files = 2, .seed = 8});
  auto good = swp::test::open_loader<typename C::Reader>(fresh.files, {.batch_records = 8});
  pipe->fill_pipeline(*good);
  retired = 0;
  while (pipe->progress()) ++retired;
  pipe->synchronize();
  CHECK(retired == 10);
}

}  // namespace test_loader_pipeline
