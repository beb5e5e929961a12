#pragma once
// The trainer's parts the training step and the run harness share: an iteration's context and
// state (Step), where an op runs, and the Trainer, whose ops are the step's bodies
// (training_step.cpp) and whose runs bind them to a preset and drive it (dlrm_trainer.cpp).

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "criteo_data.hpp"
#include "dlrm_model.hpp"
#include "dlrm_trainer.hpp"
#include "rank_failures.hpp"
#include "step_ops.hpp"
#include "swp/comm/input_dist.hpp"
#include "swp/device/stream.hpp"
#include "swp/device/work_tag.hpp"
#include "swp/engine/plan.hpp"
#include "swp/io/loader.hpp"
#include "swp/presets/preset.hpp"
#include "swp/trace/trace.hpp"

namespace dlrm {

/// What the source hands a pipeline: one loader batch per data shard this rank reads.
struct DlrmBatch {
  std::int64_t index = 0;  // the run's iteration: the same on every rank
  std::vector<swp::io::Batch> shards;
};

struct Step;
struct Fields {
  std::shared_ptr<Step> step;  // created by H2D; the stream work holds its own reference
};
using Ctx = swp::IterContext<DlrmBatch, Fields>;

/// One iteration's state on this rank. The context slot is reset when an iteration is
/// admitted, so the work queued on streams keeps the Step alive through its own shared_ptr.
struct Step {
  std::int64_t iter = 0;
  HostBatch host;
  swp::ModuleInput input;  // the ids for each owner rank, from H2D to InputDistStart
  at::Tensor dense, labels;
  swp::InputDist::Batch dist;
  std::vector<at::Tensor> ids, offsets, bag_of;  // per owned table, over the global batch
  at::Tensor pooled_send, emb_recv, emb_leaf, loss;
  at::Tensor emb_grad, grad_recv, gather_send, gather_recv;
  std::vector<at::Tensor> grad_sum;
  std::vector<swp::Future<void>> lookup_comm, backward_comm;
};

/// Where an op runs: the stream, and the task and iteration its errors name.
struct Where {
  swp::Stream& stream;
  std::string task;
  std::int64_t iter;
  swp::WorkTag tag{};  // the task instance the trace shows the stream work under
};

/// A run's wall time on this rank and its losses.
struct RunResult {
  double seconds = 0;
  std::vector<double> losses;  // global training loss per iteration
  std::optional<swp::Trace> trace;
};

/// This rank's part of the training: its communicators, its model shard, its data, and the
/// ops of the step (training_step.cpp), bound to a preset's tasks and run (dlrm_trainer.cpp).
class Trainer {
 public:
  Trainer(swp::Communicator& world, const TrainOptions& o);

  void prepare_data();
  void reset_model() {
    dense_ = std::make_unique<DenseArch>(spec_);
    shard_ = std::make_unique<EmbeddingShard>(spec_, rank_, ranks_);
  }
  [[nodiscard]] std::vector<at::Tensor> snapshot() const {
    std::vector<at::Tensor> out;
    for (const auto& p : dense_->parameters()) out.push_back(p.detach().clone());
    for (const auto& t : shard_->tables()) out.push_back(t.clone());
    return out;
  }
  [[nodiscard]] double max_abs_diff(const std::vector<at::Tensor>& before) const;

  RunResult run_serial(std::int64_t iters);
  RunResult run_pipelined();
  double evaluate();
  [[nodiscard]] double all_max(double x);

  [[nodiscard]] int rank() const { return rank_; }

 private:
  void check_sizes() const;
  [[nodiscard]] std::vector<int> all_ranks() const {
    std::vector<int> all(static_cast<std::size_t>(ranks_));
    for (int r = 0; r < ranks_; ++r) all[static_cast<std::size_t>(r)] = r;
    return all;
  }
  [[nodiscard]] std::filesystem::path data_dir() const;
  [[nodiscard]] std::vector<swp::io::Loader> open_loaders(const std::string& split, bool train) const;
  [[nodiscard]] std::function<std::optional<DlrmBatch>()> make_source(std::int64_t iters) const;
  [[nodiscard]] swp::presets::BasicPreset<swp::Plan<Ctx>> bound_preset();
  void barrier();

  // The ops (training_step.cpp); each does its CPU side now and queues the rest.
  void run_op(Op op, Ctx& ctx, const Where& where);
  void parse(Ctx& ctx, const Where& where);
  void dist_start(Step& st, const Where& where);
  void queue(const Where& where, const std::shared_ptr<Step>& st, std::function<void(Step&)> fn);
  void lookup(const std::shared_ptr<Step>& st, const Where& where);
  void backward(const std::shared_ptr<Step>& st, const Where& where);
  void prepare_lookup(Step& st) const;
  void dense_forward(Step& st) const;
  void emb_update(Step& st) const;
  void record_loss(std::int64_t iter, double loss) {
    std::lock_guard lock(losses_mutex_);
    if (static_cast<std::size_t>(iter) >= losses_.size()) losses_.resize(static_cast<std::size_t>(iter) + 1);
    losses_[static_cast<std::size_t>(iter)] = loss;
  }

  TrainOptions o_;
  ModelSpec spec_;
  DataSpec data_;
  swp::Communicator& world_;
  int rank_, ranks_, shards_;
  std::size_t local_ = 0;  // samples per rank and iteration
  RankFailures failures_;
  std::unique_ptr<swp::Communicator> dist_comm_, emb_comm_, dense_comm_;
  swp::InputDist dist_;
  std::vector<std::vector<int>> owned_by_;  // tables of each rank
  std::vector<std::size_t> fwd_send_counts_, fwd_recv_counts_, recv_offset_;
  std::unique_ptr<DenseArch> dense_;
  std::unique_ptr<EmbeddingShard> shard_;
  std::map<std::string, std::vector<Op>> ops_;
  std::mutex losses_mutex_;
  std::vector<double> losses_;
};

}  // namespace dlrm
