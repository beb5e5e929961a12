// dlrm_train: DLRM trained on swp's pipelines (docs/dlrm.md). Samples come from swp record
// files through swp::io::Loader (generated on first use), embedding tables are sharded
// table-wise over the MPI ranks, ids reach the tables' owners through seed 004's InputDist,
// and the training step, written once as tasks, runs on the preset and engine named:
//   mpirun -np R build/examples/dlrm/dlrm_train --preset P [--engine dataflow|clock]
//          --iters N [--check-serial] [--eval] [--trace F.json --svg F.svg]
// Rank 0 prints `metric NAME VALUE UNIT` lines; a bad flag prints one `error: ...` line (rank
// 0) and every rank exits 2; a failure on any rank stops every rank, each printing one
// `error: rank R: ...` line naming the failed rank, task and iteration, exit 1.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "dlrm_trainer.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"

namespace {

// "64,32" -> {64, 32}; CLI11 checks each element's range.
std::vector<int> widths(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int w = 0;
    std::size_t used = 0;
    try {
      w = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || w < 1 || w > 65536)
      throw std::invalid_argument(flag + ": expected widths 1..65536 separated by commas, got '" +
                                  text + "'");
    out.push_back(w);
  }
  if (out.empty()) throw std::invalid_argument(flag + ": expected at least one width");
  return out;
}

// "RANK:TASK:ITER".
dlrm::InjectedFailure parse_failure(const std::string& text) {
  const auto a = text.find(':'), b = text.rfind(':');
  dlrm::InjectedFailure f;
  try {
    if (a == std::string::npos || a == b) throw std::invalid_argument("shape");
    std::size_t used = 0;
    f.rank = std::stoi(text.substr(0, a), &used);
    if (used != a) throw std::invalid_argument("rank");
    f.task = text.substr(a + 1, b - a - 1);
    f.iter = std::stoll(text.substr(b + 1), &used);
    if (used != text.size() - b - 1 || f.task.empty() || f.iter < 0)
      throw std::invalid_argument("iter");
  } catch (const std::exception&) {
    throw std::invalid_argument("--inject-failure: expected RANK:TASK:ITER, got '" + text + "'");
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  swp::MpiSession mpi(argc, argv);
  auto world = swp::MpiCommunicator::world();
  const bool leader = world->rank() == 0;

  CLI::App app{"DLRM on swp's pipelines: sharded embeddings over MPI ranks, the training step "
               "run by a preset (docs/dlrm.md).",
               "dlrm_train"};
  dlrm::TrainOptions o;
  std::string bottom = "64", top = "64", inject;
  const auto presets = dlrm::trainable_presets();
  app.add_option("--preset", o.preset, "the pipeline (seed 000's TorchRec presets)")
      ->check(CLI::IsMember(presets));
  app.add_option("--engine", o.engine, "dataflow or clock")
      ->check(CLI::IsMember({"dataflow", "clock"}));
  app.add_option("--max-depth", o.max_depth, "data-flow: iterations in flight (0: the plan's depth)")
      ->check(examples::integer_in(0, 64));
  app.add_option("--iters", o.iters, "training iterations")->check(examples::integer_in(1, 100'000'000));
  app.add_option("--batch", o.batch, "global batch (samples per iteration over all ranks)")
      ->check(examples::integer_in(1, 1 << 20));
  app.add_option("--tables", o.tables, "embedding tables (sparse features)")
      ->check(examples::integer_in(1, 1024));
  app.add_option("--rows", o.rows, "rows per table")->check(examples::integer_in(1, 1 << 30));
  app.add_option("--dim", o.dim, "embedding dimension")->check(examples::integer_in(1, 4096));
  app.add_option("--bottom", bottom, "hidden widths of the bottom MLP, e.g. 64,32");
  app.add_option("--top", top, "hidden widths of the top MLP, e.g. 64,32");
  app.add_option("--lr", o.lr, "SGD learning rate, dense parameters")
      ->check(examples::number_in(0, 100));
  app.add_option("--emb-lr", o.emb_lr, "SGD learning rate, embedding rows")
      ->check(examples::number_in(0, 1000));
  app.add_option("--seed", o.model_seed, "initial weights")->check(examples::integer_in(0, 1LL << 62));
  app.add_option("--data-seed", o.data_seed, "the teacher, the samples and the shuffle")
      ->check(examples::integer_in(0, 1LL << 62));
  app.add_option("--data", o.data_dir, "dataset directory (generated when missing or for other sizes)");
  app.add_option("--train-samples", o.train_samples, "training samples")
      ->check(examples::integer_in(1, 1LL << 32));
  app.add_option("--eval-samples", o.eval_samples, "held-out samples")
      ->check(examples::integer_in(1, 1LL << 32));
  app.add_option("--data-shards", o.data_shards,
                 "loader shards the global batch is read from (a multiple of the ranks; 0: one "
                 "per rank) — equal values give equal batches on any number of ranks")
      ->check(examples::integer_in(0, 4096));
  app.add_option("--torch-threads", o.torch_threads, "LibTorch intra-op threads per rank")
      ->check(examples::integer_in(1, 256));
  app.add_option("--semi-sync-start", o.semi_sync_start,
                 "semi_sync: synchronous iterations before the stale ones")
      ->check(examples::integer_in(0, 100'000'000));
  app.add_flag("--check-serial", o.check_serial,
               "also run the plain loop (no pipeline) and compare speed and weights");
  app.add_flag("--eval", o.eval, "held-out loss before and after training");
  app.add_option("--trace", o.trace_json, "Chrome-trace JSON of the pipelined run (rank 0)");
  app.add_option("--svg", o.svg, "SVG timeline of the pipelined run (rank 0)");
  app.add_option("--losses", o.losses_out, "per-iteration losses, 'iter loss [serial_loss]' (rank 0)");
  app.add_option("--inject-failure", inject, "RANK:TASK:ITER — that task throws (tests)");

  // Every rank parses the same command line; rank 0 alone says what is wrong.
  std::streambuf* const cerr_buf = std::cerr.rdbuf();
  if (!leader) std::cerr.rdbuf(nullptr);
  const auto exit_code = examples::parse(app, argc, argv);
  std::cerr.rdbuf(cerr_buf);
  if (exit_code) return *exit_code;
  try {
    o.bottom = widths("--bottom", bottom);
    o.top = widths("--top", top);
    if (!inject.empty()) o.inject = parse_failure(inject);
  } catch (const std::invalid_argument& e) {
    if (leader) examples::usage_error(app, e.what());
    return 2;
  }

  try {
    const auto metrics = dlrm::train(*world, o);
    if (leader) {
      std::printf("dlrm_train: preset %s, engine %s, %d ranks, %lld iterations, batch %d, "
                  "%d tables x %lld rows x dim %d\n",
                  o.preset.c_str(), o.engine.c_str(), world->size(),
                  static_cast<long long>(o.iters), o.batch, o.tables,
                  static_cast<long long>(o.rows), o.dim);
      for (const auto& m : metrics)
        std::printf("metric %s %.9g %s\n", m.name.c_str(), m.value, m.unit.c_str());
    }
  } catch (const std::invalid_argument& e) {
    if (leader) std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    // Errors from the run name their rank already; others (data, setup) get it here.
    const std::string prefix = "rank " + std::to_string(world->rank()) + ": ";
    std::fprintf(stderr, "error: %s%s\n", what.rfind("rank ", 0) == 0 ? "" : prefix.c_str(),
                 what.c_str());
    std::fflush(stderr);
    world->abort(what);
    return 1;
  }
  return 0;
}
