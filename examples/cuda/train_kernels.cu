// Kernels of the GPU training-step example (see train_kernels.hpp).

#include "train_kernels.hpp"

namespace train {

namespace {

constexpr int threads = 256;
int blocks(int n) { return (n + threads - 1) / threads; }

__global__ void input_dist_kernel(const int* in, int* out, int n, int rows, int rounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned v = static_cast<unsigned>(in[i]);
  for (int r = 0; r < rounds; ++r) v = v * 2654435761u + 0x9e3779b9u;
  out[i] = static_cast<int>(v % static_cast<unsigned>(rows));
}

__global__ void gather_kernel(const float* table, const int* ids, float* out, int batch, int dim) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= batch * dim) return;
  out[i] = table[static_cast<long>(ids[i / dim]) * dim + i % dim];
}

__global__ void relu_kernel(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] < 0.f) x[i] = 0.f;
}

__global__ void mse_kernel(const float* y, const float* t, float* dy, float* loss, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float d = y[i] - t[i];
  dy[i] = 2.f * d / n;
  atomicAdd(loss, d * d / n);
}

__global__ void relu_backward_kernel(const float* h, float* dh, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && h[i] <= 0.f) dh[i] = 0.f;
}

}  // namespace

void input_dist(const int* ids_in, int* ids_out, int n, int rows, int rounds, cudaStream_t s) {
  input_dist_kernel<<<blocks(n), threads, 0, s>>>(ids_in, ids_out, n, rows, rounds);
}
void gather(const float* table, const int* ids, float* out, int batch, int dim, cudaStream_t s) {
  gather_kernel<<<blocks(batch * dim), threads, 0, s>>>(table, ids, out, batch, dim);
}
void relu(float* x, int n, cudaStream_t s) { relu_kernel<<<blocks(n), threads, 0, s>>>(x, n); }
void mse(const float* y, const float* t, float* dy, float* loss, int n, cudaStream_t s) {
  mse_kernel<<<blocks(n), threads, 0, s>>>(y, t, dy, loss, n);
}
void relu_backward(const float* h, float* dh, int n, cudaStream_t s) {
  relu_backward_kernel<<<blocks(n), threads, 0, s>>>(h, dh, n);
}

}  // namespace train
