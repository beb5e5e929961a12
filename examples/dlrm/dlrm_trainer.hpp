#pragma once
// The DLRM training run: data on disk, model sharded over the communicator's ranks, the
// training step bound to a preset's tasks and run by an engine — and, to compare against,
// the same step as a plain loop. No torch in this header: dlrm_train.cpp only parses flags.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "criteo_data.hpp"
#include "swp/comm/communicator.hpp"

namespace dlrm {

/// A failure to inject, for the tests: task `task` of iteration `iter` throws on rank `rank`.
struct InjectedFailure {
  int rank = 0;
  std::string task;
  std::int64_t iter = 0;
};

/// What dlrm_train was asked to do.
struct TrainOptions {
  std::string preset = "sparse_dist";
  std::string engine = "dataflow";  ///< "dataflow" or "clock"
  int max_depth = 0;                ///< data-flow: iterations in flight; 0: the plan's depth
  std::int64_t iters = 200;
  int batch = 256;        ///< global batch: every rank takes batch / world samples
  int data_shards = 0;    ///< loaders the global batch is read from (0: world size)
  int tables = 8;
  std::int64_t rows = 20'000;
  int dim = 16;
  std::vector<int> bottom = {64};
  std::vector<int> top = {64};
  double lr = 0.1, emb_lr = 0.5;
  std::uint64_t model_seed = 7;
  std::uint64_t data_seed = 2019;
  std::uint64_t train_samples = 65'536;
  std::uint64_t eval_samples = 4'096;
  std::filesystem::path data_dir;   ///< empty: a directory under the system's temp dir
  int torch_threads = 1;            ///< intra-op threads (1: reductions in a fixed order)
  std::int64_t semi_sync_start = 100;  ///< semi_sync: synchronous batches before the stale ones
  bool check_serial = false;
  bool eval = false;                ///< held-out loss before and after training
  std::filesystem::path trace_json, svg;
  std::filesystem::path losses_out;  ///< rank 0 writes "iter loss" lines of the pipelined run
  std::optional<InjectedFailure> inject;
};

/// One `metric NAME VALUE UNIT` line.
struct Metric {
  std::string name;
  double value = 0;
  std::string unit;
};

/// Runs what `options` says on the ranks of `world` (collective: every rank calls it alike)
/// and returns the metrics (the same on every rank; rank 0 prints them). Throws
/// std::invalid_argument for options that do not fit (naming the flag), and the run's error
/// when a task fails on this rank or a peer — naming the rank, task and iteration.
std::vector<Metric> train(swp::Communicator& world, const TrainOptions& options);

/// The presets the training step can be bound to (those with a backward and an optimizer).
[[nodiscard]] std::vector<std::string> trainable_presets();

}  // namespace dlrm
