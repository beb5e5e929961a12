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
// Each piece of work ("op", step_ops.hpp) runs in the first task of its list that the preset
// has, so one set of bodies serves every preset. A body does its CPU side at once (parsing,
// calling collectives, which take their place in the communicator's order then) and queues its
// tensor work on the task's stream, where the engine orders it after the producers' work on
// other streams. The serial baseline runs the same bodies one iteration at a time on one
// stream and waits for each.

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "swp/torch/tensor_collectives.hpp"
#include "trainer.hpp"

namespace dlrm {

namespace {

void check_done(const swp::Future<void>& f, const char* what) {
  if (!f.ready()) throw std::logic_error(std::string(what) + " had not completed in stream order");
  f.get();
}

}  // namespace

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

}  // namespace dlrm
