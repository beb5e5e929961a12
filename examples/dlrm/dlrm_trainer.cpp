// The DLRM training step as tasks (see docs/dlrm.md for the data flow):
//
//   H2D             parse the loader's records; the dense features and labels become tensors
//   InputDistStart  seed 004's two levels on the data-dist stream: splits, then ids to owners
//   InputDistWait   wait #1 (the splits)
//   EmbPrefetch     wait #2 and the owned tables' lookup inputs (ids, offsets) for the batch
//   EmbLookup       sum-pooled rows of the owned tables, sent back to the samples' ranks
//   Forward         dense forward (bottom MLP, interaction, top MLP) and the loss
//   Backward        gradients; the pooled embeddings' back to the tables' owners, the dense
//                   ones gathered from every rank and added in rank order
//   EmbBackward     SGD on the embedding rows the batch touched (fused into Backward where
//                   the preset has no EmbBackward: FBGEMM's fused TBE)
//   OptimizerStep   SGD on the dense parameters
//
// Each piece of work ("op") runs in the first task of its list that the preset has, so one
// set of bodies serves every preset: without InputDistStart (base), Forward distributes its
// own input; without EmbLookup, Forward looks up; and so on. A body does its CPU side at once
// (parsing, calling collectives, which take their place in the communicator's order then) and
// queues its tensor work on the task's stream, where the engine orders it after the producers'
// work on other streams. The serial baseline runs the same bodies one iteration at a time on
// one stream and waits for each.

#include "dlrm_trainer.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "dlrm_model.hpp"
#include "swp/comm/abort_on_failure.hpp"
#include "swp/comm/input_dist.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/run_observer.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/engine/task_scope.hpp"
#include "swp/io/dataset.hpp"
#include "swp/io/loader.hpp"
#include "swp/presets/preset_registry.hpp"
#include "swp/presets/preset_runner.hpp"
#include "swp/torch/tensor_collectives.hpp"
#include "swp/trace/chrome_trace.hpp"
#include "swp/trace/svg_timeline.hpp"
#include "swp/trace/trace_recorder.hpp"

namespace dlrm {

namespace {

using Clock = std::chrono::steady_clock;

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

enum class Op { parse, dist_start, dist_wait, prepare, lookup, dense_forward, backward, emb_update,
                optimizer };
constexpr std::array all_ops{Op::parse,         Op::dist_start, Op::dist_wait,
                             Op::prepare,       Op::lookup,     Op::dense_forward,
                             Op::backward,      Op::emb_update, Op::optimizer};

const char* op_name(Op op) {
  switch (op) {
    case Op::parse: return "parse";
    case Op::dist_start: return "input dist start";
    case Op::dist_wait: return "input dist wait";
    case Op::prepare: return "lookup inputs";
    case Op::lookup: return "embedding lookup";
    case Op::dense_forward: return "dense forward";
    case Op::backward: return "backward";
    case Op::emb_update: return "embedding update";
    case Op::optimizer: return "optimizer";
  }
  return "?";
}

// The tasks an op may run in, first choice first.
std::vector<std::string> hosts_of(Op op) {
  switch (op) {
    case Op::parse: return {"H2D"};
    case Op::dist_start: return {"InputDistStart", "Forward"};
    case Op::dist_wait: return {"InputDistWait", "Forward"};
    case Op::prepare: return {"EmbPrefetch", "EmbLookup", "Forward"};
    case Op::lookup: return {"EmbLookup", "Forward"};
    case Op::dense_forward: return {"Forward"};
    case Op::backward: return {"Backward"};
    case Op::emb_update: return {"EmbBackward", "Backward"};
    case Op::optimizer: return {"OptimizerStep"};
  }
  return {};
}

/// Which ops each task of `plan` runs, in op order; throws naming the preset and the op that
/// has no task there.
std::map<std::string, std::vector<Op>> assign_ops(const swp::PipelinePlan& plan,
                                                  const std::string& preset) {
  std::set<std::string> names;
  for (const auto& t : plan.tasks) names.insert(t.task.name);
  std::map<std::string, std::vector<Op>> out;
  for (const auto& n : names) out[n];
  for (Op op : all_ops) {
    const auto hosts = hosts_of(op);
    const auto it = std::find_if(hosts.begin(), hosts.end(),
                                 [&](const std::string& h) { return names.count(h) != 0; });
    if (it == hosts.end())
      throw std::invalid_argument("--preset " + preset + ": the DLRM step's " + op_name(op) +
                                  " needs one of the tasks " + hosts.front() +
                                  (hosts.size() > 1 ? ", ..." : "") + ", which the preset lacks");
    out[*it].push_back(op);
  }
  return out;
}

/// The first failure of stream work on this rank, with the rank, task and iteration; aborting
/// the communicators so that the peers stop within a second.
class Failures {
 public:
  Failures(int rank, swp::Communicator& world) : rank_(rank), world_(world) {}

  [[nodiscard]] bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

  void record(const std::string& task, std::int64_t iter, const std::exception_ptr& error) {
    std::string why = swp::detail::what_of(error);
    std::string message;
    try {
      std::rethrow_exception(error);
    } catch (const swp::CommAborted& aborted) {
      if (aborted.aborting_rank() == rank_) {
        // Our own abort (a task body failed here): that failure is what the run reports.
        failed_.store(true, std::memory_order_release);
        return;
      }
      // A peer's failure reached us: say whose, not only which of our operations it stopped.
      message = "rank " + std::to_string(rank_) + ": stopped in task '" + task + "' iteration " +
                std::to_string(iter) + " because " + world_.abort_reason();
    } catch (...) {
      message = "rank " + std::to_string(rank_) + ": task '" + task + "' failed in iteration " +
                std::to_string(iter) + ": " + why;
    }
    {
      std::lock_guard lock(mutex_);
      if (!first_.empty()) return;
      first_ = message;
      failed_.store(true, std::memory_order_release);
    }
    world_.abort("task '" + task + "' failed in iteration " + std::to_string(iter) + ": " + why);
  }

  /// Throws the first failure recorded, if any (not for our own abort: the task body's
  /// error that caused it is reported instead).
  void throw_if_failed() const {
    if (!failed()) return;
    std::lock_guard lock(mutex_);
    if (!first_.empty()) throw std::runtime_error(first_);
  }

 private:
  int rank_;
  swp::Communicator& world_;
  mutable std::mutex mutex_;
  std::atomic<bool> failed_{false};
  std::string first_;
};

/// Where an op runs: the stream, and the task and iteration its errors name.
struct Where {
  swp::Stream& stream;
  std::string task;
  std::int64_t iter;
  swp::WorkTag tag{};  // the task instance the trace shows the stream work under
};

void check_done(const swp::Future<void>& f, const char* what) {
  if (!f.ready()) throw std::logic_error(std::string(what) + " had not completed in stream order");
  f.get();
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct RunResult {
  double seconds = 0;
  std::vector<double> losses;  // global training loss per iteration
  std::optional<swp::Trace> trace;
};

class Trainer {
 public:
  Trainer(swp::Communicator& world, const TrainOptions& o)
      : o_(o),
        world_(world),
        rank_(world.rank()),
        ranks_(world.size()),
        shards_(o.data_shards == 0 ? world.size() : o.data_shards),
        failures_(world.rank(), world) {
    spec_.tables = o.tables;
    spec_.rows = o.rows;
    spec_.dim = o.dim;
    spec_.bottom = o.bottom;
    spec_.top = o.top;
    spec_.lr = o.lr;
    spec_.emb_lr = o.emb_lr;
    spec_.seed = o.model_seed;
    data_.tables = o.tables;
    data_.rows = o.rows;
    data_.seed = o.data_seed;
    check_sizes();
    local_ = o.batch / ranks_;
    const std::vector<int> all = all_ranks();
    dist_comm_ = world.split(all);
    emb_comm_ = world.split(all);
    dense_comm_ = world.split(all);
    dist_.add_module("ebc", *dist_comm_);
    for (int q = 0; q < ranks_; ++q) {
      owned_by_.push_back(EmbeddingShard::owned_by(o.tables, q, ranks_));
      recv_offset_.push_back(q == 0 ? 0
                                    : recv_offset_.back() + fwd_recv_counts_.back());
      fwd_recv_counts_.push_back(owned_by_.back().size() * local_ * static_cast<std::size_t>(o.dim));
    }
    fwd_send_counts_.assign(static_cast<std::size_t>(ranks_),
                            owned_by_[static_cast<std::size_t>(rank_)].size() * local_ *
                                static_cast<std::size_t>(o.dim));
    reset_model();
  }

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

  // The ops (see the file comment); each does its CPU side now and queues the rest.
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
  Failures failures_;
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

void Trainer::check_sizes() const {
  const auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (shards_ < 1 || shards_ % ranks_ != 0)
    bad("--data-shards " + std::to_string(shards_) + " must be a multiple of the " +
        std::to_string(ranks_) + " ranks");
  if (o_.batch % shards_ != 0)
    bad("--batch " + std::to_string(o_.batch) + " must split evenly over " +
        std::to_string(shards_) + " data shards");
  if (o_.train_samples / static_cast<std::uint64_t>(o_.batch) < 1)
    bad("--train-samples " + std::to_string(o_.train_samples) + " must hold a batch of " +
        std::to_string(o_.batch));
  if (o_.eval && o_.eval_samples / static_cast<std::uint64_t>(o_.batch) < 1)
    bad("--eval-samples " + std::to_string(o_.eval_samples) + " must hold a batch of " +
        std::to_string(o_.batch));
  if (o_.inject && (o_.inject->rank < 0 || o_.inject->rank >= ranks_))
    bad("--inject-failure: rank " + std::to_string(o_.inject->rank) + " is not in 0.." +
        std::to_string(ranks_ - 1));
}

std::filesystem::path Trainer::data_dir() const {
  if (!o_.data_dir.empty()) return o_.data_dir;
  const std::string key = data_.describe() + " " + std::to_string(o_.train_samples) + " " +
                          std::to_string(o_.eval_samples);
  return std::filesystem::temp_directory_path() /
         ("swp-dlrm-" + std::to_string(std::hash<std::string>{}(key) % 1'000'000'007ull));
}

void Trainer::barrier() {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  std::int32_t one = 1, sum = 0;
  auto done = dense_comm_->all_reduce(rt.stream("default"), &one, &sum, 1, swp::DataType::i32,
                                      swp::ReduceOp::sum, "barrier");
  rt.stream("default").synchronize();
  done.get();
}

double Trainer::all_max(double x) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  double out = 0;
  auto done = dense_comm_->all_reduce(rt.stream("default"), &x, &out, 1, swp::DataType::f64,
                                      swp::ReduceOp::max, "max");
  rt.stream("default").synchronize();
  done.get();
  return out;
}

void Trainer::prepare_data() {
  const auto dir = data_dir();
  if (rank_ == 0) {
    const std::pair<const char*, std::uint64_t> splits[] = {{"train", o_.train_samples},
                                                            {"eval", o_.eval_samples}};
    std::uint64_t first = 0;
    for (const auto& [split, samples] : splits) {
      if (!dataset_matches(dir / split, data_, samples)) {
        write_dataset(dir / split, data_, first, samples, 4);
        stamp_dataset(dir / split, data_, samples);
      }
      first += std::uint64_t{1} << 40;  // held-out samples are other samples
    }
  }
  barrier();
}

std::vector<swp::io::Loader> Trainer::open_loaders(const std::string& split, bool train) const {
  std::vector<swp::io::Loader> out;
  const int per_rank = shards_ / ranks_;
  for (int k = 0; k < per_rank; ++k) {
    const int shard = rank_ * per_rank + k;
    swp::io::LoaderOptions lo;
    lo.name = split + " shard " + std::to_string(shard);
    lo.batch_records = static_cast<std::size_t>(o_.batch / shards_);
    lo.drop_last = true;
    lo.shuffle = train;
    lo.seed = o_.data_seed;
    lo.rank = static_cast<std::uint32_t>(shard);
    lo.world = static_cast<std::uint32_t>(shards_);
    lo.read_threads = 1;
    out.push_back(swp::io::Loader::open_dir(data_dir() / split, lo));
  }
  return out;
}

// `iters` batches, epoch after epoch. Every shard's epoch is cut at the batches the smallest
// share holds, so all ranks take the same number of batches from each epoch.
std::function<std::optional<DlrmBatch>()> Trainer::make_source(std::int64_t iters) const {
  struct State {
    std::vector<swp::io::Loader> loaders;
    std::uint64_t per_epoch = 0, taken_in_epoch = 0;
    std::int64_t next = 0, end = 0;
  };
  auto s = std::make_shared<State>();
  s->loaders = open_loaders("train", true);
  const std::uint64_t smallest_share = o_.train_samples / static_cast<std::uint64_t>(shards_);
  s->per_epoch = smallest_share / static_cast<std::uint64_t>(o_.batch / shards_);
  s->end = iters;
  return [s]() -> std::optional<DlrmBatch> {
    if (s->next == s->end) return std::nullopt;
    if (s->taken_in_epoch == s->per_epoch) {
      for (auto& l : s->loaders) l.restart(l.epoch() + 1);
      s->taken_in_epoch = 0;
    }
    DlrmBatch b;
    b.index = s->next++;
    for (auto& l : s->loaders) {
      auto batch = l.take();
      if (!batch) throw std::logic_error("loader '" + l.options().name + "' ended its epoch early");
      b.shards.push_back(std::move(*batch));
    }
    ++s->taken_in_epoch;
    return b;
  };
}

void Trainer::queue(const Where& where, const std::shared_ptr<Step>& st,
                    std::function<void(Step&)> fn) {
  where.stream.enqueue(
      [this, st, fn = std::move(fn), task = where.task, iter = where.iter] {
        if (failures_.failed()) return;  // after a failure nothing more is computed or sent
        try {
          fn(*st);
        } catch (...) {
          failures_.record(task, iter, std::current_exception());
        }
      },
      {}, where.tag);
}

void Trainer::parse(Ctx& ctx, const Where& where) {
  auto st = std::make_shared<Step>();
  ctx.step = st;
  st->iter = ctx.batch.index;
  st->host = empty_batch(data_);
  for (const auto& shard : ctx.batch.shards) append_batch(shard, data_, st->host);
  if (st->host.samples != local_)
    throw std::runtime_error("batch has " + std::to_string(st->host.samples) + " samples, " +
                             std::to_string(local_) + " expected");
  // The ids each owner gets: its tables' bag lengths, then their ids (a KJT's lengths and
  // values, keyed by table order).
  st->input.to_rank.assign(static_cast<std::size_t>(ranks_), {});
  for (int q = 0; q < ranks_; ++q) {
    auto& out = st->input.to_rank[static_cast<std::size_t>(q)];
    for (int t : owned_by_[static_cast<std::size_t>(q)]) {
      const auto& lengths = st->host.lengths[static_cast<std::size_t>(t)];
      out.insert(out.end(), lengths.begin(), lengths.end());
    }
    for (int t : owned_by_[static_cast<std::size_t>(q)]) {
      const auto& ids = st->host.ids[static_cast<std::size_t>(t)];
      out.insert(out.end(), ids.begin(), ids.end());
    }
  }
  queue(where, st, [this](Step& s) {
    const auto b = static_cast<std::int64_t>(local_);
    s.dense = at::from_blob(s.host.dense.data(), {b, data_.dense}, at::kFloat).clone();
    s.labels = at::from_blob(s.host.labels.data(), {b}, at::kFloat).clone();
  });
}

void Trainer::dist_start(Step& st, const Where& where) {
  st.dist = dist_.start(where.stream, {{"ebc", std::move(st.input)}},
                        "InputDist iter " + std::to_string(where.iter));
}

// From every source rank's ids: for each owned table, the ids, the bags' offsets and each
// id's bag, over the global batch (rank 0's samples first).
void Trainer::prepare_lookup(Step& st) const {
  check_done(st.dist.tensors("ebc"), "the input distribution's ids");
  const swp::ModuleOutput in = st.dist.take("ebc");
  const auto& mine = owned_by_[static_cast<std::size_t>(rank_)];
  const std::size_t n = mine.size();
  std::vector<std::vector<std::int64_t>> ids(n), offsets(n), bag_of(n);
  for (int s = 0; s < ranks_; ++s) {
    const auto from = in.from(s);
    if (from.size() < n * local_)
      throw std::runtime_error("rank " + std::to_string(s) + " sent " +
                               std::to_string(from.size()) + " values, fewer than its lengths");
    std::size_t at = n * local_;
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t i = 0; i < local_; ++i) {
        const auto len = static_cast<std::size_t>(from[k * local_ + i]);
        if (at + len > from.size())
          throw std::runtime_error("rank " + std::to_string(s) + " sent a bag past its ids");
        offsets[k].push_back(static_cast<std::int64_t>(ids[k].size()));
        const auto bag = static_cast<std::int64_t>(static_cast<std::size_t>(s) * local_ + i);
        for (std::size_t j = 0; j < len; ++j) {
          ids[k].push_back(from[at + j]);
          bag_of[k].push_back(bag);
        }
        at += len;
      }
    }
  }
  st.ids.clear();
  st.offsets.clear();
  st.bag_of.clear();
  for (std::size_t k = 0; k < n; ++k) {
    st.ids.push_back(at::tensor(ids[k], at::kLong));
    st.offsets.push_back(at::tensor(offsets[k], at::kLong));
    st.bag_of.push_back(at::tensor(bag_of[k], at::kLong));
  }
}

void Trainer::lookup(const std::shared_ptr<Step>& st, const Where& where) {
  const auto n = static_cast<std::int64_t>(owned_by_[static_cast<std::size_t>(rank_)].size());
  const auto b = static_cast<std::int64_t>(local_);
  std::size_t recv_total = 0;
  for (auto c : fwd_recv_counts_) recv_total += c;
  st->pooled_send = at::empty({ranks_, n, b, o_.dim}, at::kFloat);
  st->emb_recv = at::empty({static_cast<std::int64_t>(recv_total)}, at::kFloat);
  queue(where, st, [this, n, b](Step& s) {
    std::vector<at::Tensor> pooled;  // [global batch, dim] per owned table
    for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k)
      pooled.push_back(shard_->lookup(k, s.ids[k], s.offsets[k]));
    if (n > 0)  // to each rank its samples' rows: [rank, table, sample, dim]
      s.pooled_send.copy_(at::stack(pooled, 0).view({n, ranks_, b, o_.dim}).permute({1, 0, 2, 3}));
  });
  st->lookup_comm.push_back(swp::all_to_all_v(*emb_comm_, where.stream, st->pooled_send,
                                              fwd_send_counts_, st->emb_recv, fwd_recv_counts_,
                                              "pooled embeddings iter " + std::to_string(where.iter)));
}

void Trainer::dense_forward(Step& st) const {
  for (const auto& f : st.lookup_comm) check_done(f, "the pooled embeddings' all_to_all");
  const auto b = static_cast<std::int64_t>(local_);
  st.emb_leaf = st.emb_recv.detach().requires_grad_(true);
  std::vector<at::Tensor> per_table(static_cast<std::size_t>(o_.tables));
  for (int t = 0; t < o_.tables; ++t) {
    const int q = t % ranks_;
    const auto offset = recv_offset_[static_cast<std::size_t>(q)] +
                        static_cast<std::size_t>(t / ranks_) * local_ * static_cast<std::size_t>(o_.dim);
    per_table[static_cast<std::size_t>(t)] =
        st.emb_leaf.narrow(0, static_cast<std::int64_t>(offset), b * o_.dim).view({b, o_.dim});
  }
  const at::Tensor logits = dense_->forward(st.dense, at::stack(per_table, 1));
  st.loss = at::binary_cross_entropy_with_logits(logits, st.labels, {}, {}, at::Reduction::Sum) /
            static_cast<double>(o_.batch);
}

void Trainer::backward(const std::shared_ptr<Step>& st, const Where& where) {
  const auto P = dense_->numel();
  st->emb_grad = at::empty_like(st->emb_recv);
  st->grad_recv = at::empty_like(st->pooled_send);
  st->gather_send = at::empty({P + 1}, at::kFloat);
  st->gather_recv = at::empty({ranks_ * (P + 1)}, at::kFloat);
  queue(where, st, [this, P](Step& s) {
    std::vector<at::Tensor> inputs = dense_->parameters();
    inputs.push_back(s.emb_leaf);
    const auto grads = torch::autograd::grad({s.loss}, inputs);
    at::NoGradGuard no_grad;
    std::int64_t at = 0;
    for (std::size_t i = 0; i + 1 < grads.size(); ++i) {
      s.gather_send.narrow(0, at, grads[i].numel()).copy_(grads[i].reshape({-1}));
      at += grads[i].numel();
    }
    s.gather_send[P] = s.loss.detach().item<float>();
    s.emb_grad.copy_(grads.back());
    s.loss = at::Tensor();  // the graph goes now, not with the Step
    s.emb_leaf = at::Tensor();
  });
  const std::string it = " iter " + std::to_string(where.iter);
  st->backward_comm.push_back(swp::all_to_all_v(*emb_comm_, where.stream, st->emb_grad,
                                                fwd_recv_counts_, st->grad_recv, fwd_send_counts_,
                                                "embedding grads" + it));
  st->backward_comm.push_back(
      swp::all_gather(*dense_comm_, where.stream, st->gather_send, st->gather_recv, "dense grads" + it));
  queue(where, st, [this, P](Step& s) {
    for (const auto& f : s.backward_comm) check_done(f, "the backward's collectives");
    // Added in rank order, whatever the backend would have done: the same sum on every rank,
    // in every run.
    const at::Tensor rows = s.gather_recv.view({ranks_, P + 1});
    at::Tensor sum = rows[0].clone();
    for (int r = 1; r < ranks_; ++r) sum.add_(rows[r]);
    s.grad_sum.clear();
    std::int64_t at = 0;
    for (const auto& p : dense_->parameters()) {
      s.grad_sum.push_back(sum.narrow(0, at, p.numel()).view(p.sizes()));
      at += p.numel();
    }
    record_loss(s.iter, sum[P].item<double>());
  });
}

void Trainer::emb_update(Step& st) const {
  for (const auto& f : st.backward_comm) check_done(f, "the embedding grads' all_to_all");
  const auto n = static_cast<std::int64_t>(owned_by_[static_cast<std::size_t>(rank_)].size());
  if (n == 0) return;
  const auto b = static_cast<std::int64_t>(local_);
  const at::Tensor g =
      st.grad_recv.view({ranks_, n, b, o_.dim}).permute({1, 0, 2, 3}).reshape({n, ranks_ * b, o_.dim});
  for (std::int64_t k = 0; k < n; ++k)
    shard_->sgd_update(static_cast<std::size_t>(k), st.ids[static_cast<std::size_t>(k)],
                       st.bag_of[static_cast<std::size_t>(k)], g[k], spec_.emb_lr);
}

void Trainer::run_op(Op op, Ctx& ctx, const Where& where) {
  if (op == Op::parse) return parse(ctx, where);
  const std::shared_ptr<Step>& st = ctx.step;
  if (!st) throw std::logic_error("no step state: H2D did not run before " + where.task);
  switch (op) {
    case Op::parse: break;
    case Op::dist_start: return dist_start(*st, where);
    case Op::dist_wait:
      return queue(where, st, [](Step& s) {
        for (const auto& f : s.dist.splits()) check_done(f, "the input distribution's splits");
      });
    case Op::prepare: return queue(where, st, [this](Step& s) { prepare_lookup(s); });
    case Op::lookup: return lookup(st, where);
    case Op::dense_forward: return queue(where, st, [this](Step& s) { dense_forward(s); });
    case Op::backward: return backward(st, where);
    case Op::emb_update: return queue(where, st, [this](Step& s) { emb_update(s); });
    case Op::optimizer:
      return queue(where, st, [this](Step& s) {
        dense_->sgd_step(s.grad_sum, spec_.lr);
        const auto iter = s.iter;
        s = Step();  // the iteration's tensors go back now
        s.iter = iter;
      });
  }
}

swp::presets::BasicPreset<swp::Plan<Ctx>> Trainer::bound_preset() {
  swp::presets::PresetOptions options;
  options.start_batch = o_.semi_sync_start;
  auto plain = swp::presets::make_preset(o_.preset, options);
  // EmbLookup sends the pooled embeddings (a collective) and, where the preset shares its
  // stream with InputDistStart (fused_sparse_dist: emb_lookup -> data_dist), the two tasks'
  // collectives of different communicators meet on one stream. The data-flow engine may submit
  // EmbLookup(i) before or after InputDistStart(i + 1), differently on each rank, and a stream
  // blocked in one collective then waits for a peer blocked in the other: deadlock (seen).
  // Globally ordered, both are submitted in (iteration, task) order on every rank.
  for (auto& phase : plain.phases)
    for (auto& t : phase.plan.tasks)
      if (t.task.name == "EmbLookup") t.schedule.globally_ordered = true;
  ops_ = assign_ops(plain.plan(), o_.preset);
  swp::presets::TaskBindings<swp::Plan<Ctx>> tasks;
  for (const auto& [task, ops] : ops_) {
    tasks.bind(task, [this, task = task, ops = ops](Ctx& ctx, swp::TaskScope& scope) {
      if (o_.inject && o_.inject->rank == rank_ && o_.inject->task == task &&
          o_.inject->iter == ctx.batch.index)
        throw std::runtime_error("injected failure (--inject-failure)");
      if (ops.empty()) return;
      const Where where{scope.stream(), task, ctx.batch.index,
                        swp::TaskScope::work_tag(scope.task(), scope.iter())};
      for (Op op : ops) run_op(op, ctx, where);
    });
  }
  return tasks.apply(plain);
}

RunResult Trainer::run_serial(std::int64_t iters) {
  const auto preset = bound_preset();
  losses_.clear();
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  swp::ClockPipeline<Ctx> pipe(rt, preset.plan());
  auto source = make_source(iters);
  swp::Stream& stream = rt.stream("default");
  const auto t0 = Clock::now();
  while (auto batch = source()) {
    const auto index = batch->index;
    try {
      pipe.run_one_serial_iter(std::move(*batch), index);
    } catch (const std::exception& e) {
      world_.abort(e.what());
      throw std::runtime_error("rank " + std::to_string(rank_) + ": " + e.what());
    }
    stream.synchronize();  // a plain loop: each iteration ends before the next one starts
    failures_.throw_if_failed();
  }
  RunResult r;
  r.seconds = seconds_since(t0);
  r.losses = losses_;
  return r;
}

RunResult Trainer::run_pipelined() {
  const auto preset = bound_preset();
  losses_.clear();
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1,
                   .dedicated_lanes = preset.dedicated_lanes});
  swp::TraceRecorder recorder;
  swp::Pipeline<Ctx>* traced = nullptr;
  const auto make = [&](const swp::Plan<Ctx>& plan) {
    std::unique_ptr<swp::Pipeline<Ctx>> pipe;
    if (o_.engine == "clock") {
      pipe = std::make_unique<swp::ClockPipeline<Ctx>>(rt, plan);
    } else {
      int depth = o_.max_depth;
      for (const auto& t : plan.tasks)  // 0: the plan's own depth, max(stage) + 1
        if (o_.max_depth == 0) depth = std::max(depth, t.schedule.stage + 1);
      pipe = std::make_unique<swp::DataFlowPipeline<Ctx>>(rt, plan, depth);
    }
    // An iteration retires once its stream work ran: its failure (recorded by that work)
    // surfaces from the progress() that retires it.
    pipe->retire_after_device(true);
    pipe->on_retire([this](const Ctx&) { failures_.throw_if_failed(); });
    swp::abort_peers_on_failure(*pipe, world_);
    if (traced != nullptr) swp::detach_run_observer(recorder, *traced);
    swp::attach_run_observer(recorder, *pipe);  // the last phase's run is what the trace shows
    traced = pipe.get();
    return pipe;
  };
  swp::presets::PresetRunner runner(preset, make);
  const auto t0 = Clock::now();
  try {
    runner.run(make_source(o_.iters));
  } catch (const std::exception& e) {
    failures_.throw_if_failed();  // the rank, task and iteration of stream work that failed
    throw std::runtime_error("rank " + std::to_string(rank_) + ": " + e.what());
  }
  RunResult r;
  r.seconds = seconds_since(t0);
  failures_.throw_if_failed();
  if (traced != nullptr) swp::detach_run_observer(recorder, *traced);
  r.trace = recorder.trace();
  r.losses = losses_;
  return r;
}

double Trainer::evaluate() {
  auto loaders = open_loaders("eval", false);
  const std::uint64_t batches =
      o_.eval_samples / static_cast<std::uint64_t>(shards_) / static_cast<std::uint64_t>(o_.batch / shards_);
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  swp::Stream& stream = rt.stream("default");
  double total = 0;
  for (std::uint64_t i = 0; i < batches; ++i) {
    Ctx ctx;
    ctx.batch.index = static_cast<std::int64_t>(i);
    for (auto& l : loaders) ctx.batch.shards.push_back(*l.take());
    const Where where{stream, "Eval", ctx.batch.index};
    for (Op op : {Op::parse, Op::dist_start, Op::dist_wait, Op::prepare, Op::lookup,
                  Op::dense_forward})
      run_op(op, ctx, where);
    auto st = ctx.step;
    st->gather_send = at::empty({1}, at::kFloat);
    st->gather_recv = at::empty({ranks_}, at::kFloat);
    queue(where, st, [](Step& s) { s.gather_send[0] = s.loss.detach().item<float>(); });
    auto done = swp::all_gather(*dense_comm_, stream, st->gather_send, st->gather_recv, "eval loss");
    stream.synchronize();
    failures_.throw_if_failed();
    done.get();
    total += st->gather_recv.sum().item<double>();
  }
  return total / static_cast<double>(batches);
}

double Trainer::max_abs_diff(const std::vector<at::Tensor>& before) const {
  const auto now = snapshot();
  double m = 0;
  for (std::size_t i = 0; i < now.size(); ++i)
    m = std::max(m, (now[i] - before[i]).abs().max().item<double>());
  return m;
}

// The trace's stream work: each stream's busy time (overlapping items merged).
struct StreamFigures {
  double overlap_efficiency = 0;  // busiest stream's busy time over the run's span
  double concurrency = 0;         // all streams' busy time over the span
};

StreamFigures stream_figures(const swp::Trace& trace) {
  std::map<std::size_t, std::vector<std::pair<double, double>>> busy;
  double first = 1e300, last = 0;
  for (const auto& s : trace.slices) {
    if (s.kind != swp::TraceSlice::Kind::device) continue;
    const double a = std::chrono::duration<double>(s.start).count();
    const double b = std::chrono::duration<double>(s.end).count();
    busy[s.track].push_back({a, b});
    first = std::min(first, a);
    last = std::max(last, b);
  }
  StreamFigures f;
  if (busy.empty() || last <= first) return f;
  double total = 0, most = 0;
  for (auto& [track, v] : busy) {
    std::sort(v.begin(), v.end());
    double sum = 0, end = -1e300;
    for (const auto& [a, b] : v) {
      const double from = std::max(a, end);
      if (b > from) sum += b - from;
      end = std::max(end, b);
    }
    total += sum;
    most = std::max(most, sum);
  }
  f.overlap_efficiency = most / (last - first);
  f.concurrency = total / (last - first);
  return f;
}

double tail_mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  const std::size_t n = std::max<std::size_t>(1, v.size() / 10);
  double sum = 0;
  for (std::size_t i = v.size() - n; i < v.size(); ++i) sum += v[i];
  return sum / static_cast<double>(n);
}

void write_losses(const std::filesystem::path& path, const std::vector<double>& pipelined,
                  const std::vector<double>& serial) {
  std::ofstream out(path);
  for (std::size_t i = 0; i < pipelined.size(); ++i) {
    out.precision(17);
    out << i << " " << pipelined[i];
    if (i < serial.size()) out << " " << serial[i];
    out << "\n";
  }
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

std::vector<std::string> trainable_presets() {
  std::vector<std::string> out;
  for (const auto& info : swp::presets::preset_catalogue()) {
    try {
      (void)assign_ops(swp::presets::make_preset(info.name).plan(), std::string(info.name));
      out.emplace_back(info.name);
    } catch (const std::invalid_argument&) {
    }
  }
  return out;
}

std::vector<Metric> train(swp::Communicator& world, const TrainOptions& o) {
  at::set_num_threads(o.torch_threads);
  Trainer trainer(world, o);
  trainer.prepare_data();
  std::vector<Metric> m;
  const auto put = [&](std::string name, double value, std::string unit) {
    m.push_back({std::move(name), value, std::move(unit)});
  };
  put("ranks", world.size(), "count");
  put("iters", static_cast<double>(o.iters), "count");

  RunResult serial;
  std::vector<at::Tensor> serial_params;
  if (o.check_serial) {
    trainer.run_serial(std::min<std::int64_t>(o.iters, 10));  // warm-up: page cache, allocator
    trainer.reset_model();
    serial = trainer.run_serial(o.iters);
    serial_params = trainer.snapshot();
    trainer.reset_model();
  }
  const double eval_before = o.eval ? trainer.evaluate() : 0;
  const RunResult run = trainer.run_pipelined();
  const double seconds = trainer.all_max(run.seconds);
  put("iters_per_s", static_cast<double>(o.iters) / seconds, "iters/s");
  put("us_per_iter", seconds * 1e6 / static_cast<double>(o.iters), "us");
  if (o.check_serial) {
    const double serial_seconds = trainer.all_max(serial.seconds);
    put("serial_iters_per_s", static_cast<double>(o.iters) / serial_seconds, "iters/s");
    put("speedup_vs_serial", serial_seconds / seconds, "x");
    put("max_abs_param_diff_vs_serial", trainer.all_max(trainer.max_abs_diff(serial_params)), "abs");
    put("serial_final_loss", tail_mean(serial.losses), "bce");
    double loss_diff = 0;
    for (std::size_t i = 0; i < run.losses.size() && i < serial.losses.size(); ++i)
      loss_diff = std::max(loss_diff, std::abs(run.losses[i] - serial.losses[i]) / std::abs(serial.losses[i]));
    put("max_rel_loss_diff_vs_serial", loss_diff, "ratio");
  }
  put("initial_loss", run.losses.empty() ? 0 : run.losses.front(), "bce");
  put("final_loss", tail_mean(run.losses), "bce");
  if (o.eval) {
    const double eval_after = trainer.evaluate();
    put("eval_loss_initial", eval_before, "bce");
    put("eval_loss_final", eval_after, "bce");
    put("eval_loss_ratio", eval_after / eval_before, "ratio");
  }
  if (run.trace) {
    const StreamFigures f = stream_figures(*run.trace);
    put("overlap_efficiency", trainer.all_max(f.overlap_efficiency), "fraction");
    put("stream_concurrency", trainer.all_max(f.concurrency), "streams");
    if (trainer.rank() == 0) {
      if (!o.trace_json.empty()) {
        std::ofstream out(o.trace_json);
        swp::write_chrome_trace(*run.trace, out);
      }
      if (!o.svg.empty()) {
        std::ofstream out(o.svg);
        swp::write_svg(*run.trace, out,
                       {.width = 1600, .title = "dlrm_train --preset " + o.preset + " --engine " +
                                                    o.engine + " (rank 0 of " +
                                                    std::to_string(world.size()) + ")"});
      }
    }
  }
  if (trainer.rank() == 0 && !o.losses_out.empty()) write_losses(o.losses_out, run.losses, serial.losses);
  return m;
}

}  // namespace dlrm
