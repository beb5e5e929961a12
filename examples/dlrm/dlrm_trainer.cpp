// The DLRM training run: the data written once and read by loaders, the model sharded over
// the ranks, the training step (training_step.cpp) bound to a preset's tasks and run by an
// engine, and the same step as a plain loop to compare against; the metrics of both.

#include "dlrm_trainer.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>

#include "swp/comm/abort_on_failure.hpp"
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
#include "trainer.hpp"

namespace dlrm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

Trainer::Trainer(swp::Communicator& world, const TrainOptions& o)
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

namespace {

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
