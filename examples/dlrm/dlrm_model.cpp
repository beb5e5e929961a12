#include "dlrm_model.hpp"

#include <cmath>
#include <stdexcept>

namespace dlrm {

namespace {

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Layers in -> widths... -> out as (weight, bias) pairs, PyTorch's default bound 1/sqrt(in).
std::vector<at::Tensor> make_mlp(int in, const std::vector<int>& hidden, int out,
                                 std::uint64_t seed, std::uint64_t stream) {
  std::vector<at::Tensor> layers;
  std::vector<int> widths = hidden;
  widths.push_back(out);
  for (int w : widths) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    layers.push_back(seeded_uniform({w, in}, bound, seed, stream++).requires_grad_(true));
    layers.push_back(seeded_uniform({w}, bound, seed, stream++).requires_grad_(true));
    in = w;
  }
  return layers;
}

}  // namespace

at::Tensor seeded_uniform(std::vector<std::int64_t> shape, double bound, std::uint64_t seed,
                          std::uint64_t stream) {
  at::Tensor t = at::empty(shape, at::kFloat);
  float* p = t.data_ptr<float>();
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull ^ (stream + 1) * 0xD1B54A32D192ED03ull;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const double u = static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53;
    p[i] = static_cast<float>((2 * u - 1) * bound);
  }
  return t;
}

DenseArch::DenseArch(const ModelSpec& spec) {
  if (spec.bottom.empty() || spec.top.empty())
    throw std::invalid_argument("the bottom and top MLPs need a hidden layer each");
  bottom_ = make_mlp(spec.dense, spec.bottom, spec.dim, spec.seed, 100);
  const int features = spec.tables + 1;
  const int pairs = features * (features - 1) / 2;
  top_ = make_mlp(spec.dim + pairs, spec.top, 1, spec.seed, 200);
  params_ = bottom_;
  params_.insert(params_.end(), top_.begin(), top_.end());
  std::vector<std::int64_t> is, js;
  for (int i = 0; i < features; ++i)
    for (int j = 0; j < i; ++j) {
      is.push_back(i);
      js.push_back(j);
    }
  tri_i_ = at::tensor(is, at::kLong);
  tri_j_ = at::tensor(js, at::kLong);
}

at::Tensor DenseArch::mlp(const at::Tensor& x, const std::vector<at::Tensor>& layers,
                          bool relu_last) {
  at::Tensor y = x;
  for (std::size_t l = 0; l < layers.size(); l += 2) {
    y = at::linear(y, layers[l], layers[l + 1]);
    if (relu_last || l + 2 < layers.size()) y = at::relu(y);
  }
  return y;
}

at::Tensor DenseArch::forward(const at::Tensor& dense, const at::Tensor& emb) const {
  const at::Tensor x = mlp(dense, bottom_, /*relu_last=*/true);          // [b, dim]
  const at::Tensor features = at::cat({x.unsqueeze(1), emb}, 1);        // [b, T+1, dim]
  const at::Tensor z = at::bmm(features, features.transpose(1, 2));    // [b, T+1, T+1]
  const at::Tensor pairs = z.index({at::indexing::Slice(), tri_i_, tri_j_});  // [b, pairs]
  return mlp(at::cat({x, pairs}, 1), top_, /*relu_last=*/false).squeeze(1);
}

std::int64_t DenseArch::numel() const {
  std::int64_t n = 0;
  for (const auto& p : params_) n += p.numel();
  return n;
}

void DenseArch::sgd_step(const std::vector<at::Tensor>& grads, double lr) {
  at::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].sub_(grads[i], lr);
}

std::vector<int> EmbeddingShard::owned_by(int tables, int rank, int world) {
  std::vector<int> out;
  for (int t = rank; t < tables; t += world) out.push_back(t);
  return out;
}

EmbeddingShard::EmbeddingShard(const ModelSpec& spec, int rank, int world)
    : owned_(owned_by(spec.tables, rank, world)) {
  // DLRM's initialiser: uniform in ±sqrt(1 / rows); each table from its own stream, so a
  // table's weights do not depend on which rank owns it.
  for (int t : owned_)
    tables_.push_back(seeded_uniform({spec.rows, spec.dim},
                                     std::sqrt(1.0 / static_cast<double>(spec.rows)), spec.seed,
                                     1000 + static_cast<std::uint64_t>(t)));
}

at::Tensor EmbeddingShard::lookup(std::size_t k, const at::Tensor& ids,
                                  const at::Tensor& offsets) const {
  at::NoGradGuard no_grad;
  return std::get<0>(at::embedding_bag(tables_[k], ids, offsets, /*scale_grad_by_freq=*/false,
                                       /*mode=sum*/ 0));
}

void EmbeddingShard::sgd_update(std::size_t k, const at::Tensor& ids, const at::Tensor& bag_of,
                                const at::Tensor& grad_pooled, double lr) {
  at::NoGradGuard no_grad;
  tables_[k].index_add_(0, ids, grad_pooled.index_select(0, bag_of), -lr);
}

}  // namespace dlrm
