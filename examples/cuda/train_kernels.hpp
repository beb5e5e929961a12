#pragma once
// The kernels of the GPU training-step example (train_kernels.cu), callable from plain C++.

#include <cuda_runtime_api.h>

namespace train {

/// ids_out[i] = a stand-in for the input-dist all-to-all: each id mapped to the row its shard
/// holds (a multiplicative hash mod `rows`), `rounds` times over to take some device time.
void input_dist(const int* ids_in, int* ids_out, int n, int rows, int rounds, cudaStream_t s);
/// out[b][d] = table[ids[b]][d]: the embedding lookup.
void gather(const float* table, const int* ids, float* out, int batch, int dim, cudaStream_t s);
/// x = max(x, 0).
void relu(float* x, int n, cudaStream_t s);
/// dy = 2 (y - t) / n and loss += mean((y - t)^2).
void mse(const float* y, const float* t, float* dy, float* loss, int n, cudaStream_t s);
/// dh = dh where h > 0, else 0 (ReLU's backward, in place).
void relu_backward(const float* h, float* dh, int n, cudaStream_t s);

}  // namespace train
