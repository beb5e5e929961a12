#pragma once
// DLRM (Naumov et al., 2019) in LibTorch, split the way TorchRec shards it: the dense part
// (bottom MLP, pairwise dot interaction, top MLP) replicated on every rank, the embedding
// tables placed table-wise on ranks (EmbeddingShard). Parameters are initialised from a
// seeded hash, so every rank (and every run) starts from the same weights.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace dlrm {

/// The model's sizes and learning rates.
struct ModelSpec {
  int dense = 13;              ///< dense input features
  int tables = 8;              ///< embedding tables (sparse features)
  std::int64_t rows = 20'000;  ///< rows of every table
  int dim = 16;                ///< embedding dimension (the bottom MLP's output too)
  std::vector<int> bottom = {64};  ///< hidden widths of the bottom MLP (output: dim)
  std::vector<int> top = {64};     ///< hidden widths of the top MLP (output: 1 logit)
  double lr = 0.1;             ///< SGD, dense parameters
  double emb_lr = 0.5;         ///< SGD, embedding rows (sparse updates)
  std::uint64_t seed = 7;      ///< initial weights
};

/// The replicated dense part: bottom MLP, interaction, top MLP. Its parameters are plain
/// tensors (weights [out, in], biases [out]) updated by sgd_step; gradients come from
/// torch::autograd::grad, so nothing accumulates in .grad between iterations.
class DenseArch {
 public:
  explicit DenseArch(const ModelSpec& spec);

  /// Logits [b] of `dense` [b, spec.dense] and the pooled embeddings `emb` [b, tables, dim].
  [[nodiscard]] at::Tensor forward(const at::Tensor& dense, const at::Tensor& emb) const;
  [[nodiscard]] const std::vector<at::Tensor>& parameters() const { return params_; }
  /// Elements of all parameters.
  [[nodiscard]] std::int64_t numel() const;
  /// p -= lr * g for each parameter and its gradient (no autograd).
  void sgd_step(const std::vector<at::Tensor>& grads, double lr);

 private:
  [[nodiscard]] static at::Tensor mlp(const at::Tensor& x, const std::vector<at::Tensor>& layers,
                                      bool relu_last);
  std::vector<at::Tensor> params_;  // bottom layers (w, b)..., then top layers (w, b)...
  std::vector<at::Tensor> bottom_, top_;
  at::Tensor tri_i_, tri_j_;  // the interaction's lower-triangle pairs (i > j)
};

/// The tables one rank owns, table-wise: table t lives on rank t % world. Lookups pool bags by
/// sum (EmbeddingBag); updates are SGD on the rows a batch touched (index_add_, sequential
/// with one intra-op thread, so the result does not depend on timing).
class EmbeddingShard {
 public:
  EmbeddingShard(const ModelSpec& spec, int rank, int world);

  /// The tables this rank owns, ascending.
  [[nodiscard]] const std::vector<int>& owned() const { return owned_; }
  /// Tables owned by `rank`, ascending (any rank's).
  [[nodiscard]] static std::vector<int> owned_by(int tables, int rank, int world);
  /// Sum-pooled rows of local table `k` (owned()[k]) for bags given by `ids` and `offsets`
  /// (each bag's first position in ids): [bags, dim].
  [[nodiscard]] at::Tensor lookup(std::size_t k, const at::Tensor& ids,
                                  const at::Tensor& offsets) const;
  /// Row id -= lr * grad of its bag, for every position (a row in several bags, or twice in
  /// one, gets each contribution, in order). `bag_of` gives each position's bag.
  void sgd_update(std::size_t k, const at::Tensor& ids, const at::Tensor& bag_of,
                  const at::Tensor& grad_pooled, double lr);
  [[nodiscard]] const std::vector<at::Tensor>& tables() const { return tables_; }

 private:
  std::vector<int> owned_;
  std::vector<at::Tensor> tables_;  // [rows, dim] each
};

/// Values uniform in [-bound, bound) from (seed, stream): the deterministic initialiser.
[[nodiscard]] at::Tensor seeded_uniform(std::vector<std::int64_t> shape, double bound,
                                        std::uint64_t seed, std::uint64_t stream);

}  // namespace dlrm
