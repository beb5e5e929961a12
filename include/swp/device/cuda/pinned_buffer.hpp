#pragma once
// PinnedBuffer: page-locked host memory (cudaMallocHost), the source of asynchronous H2D copies.

#include <cstddef>
#include <span>
#include <utility>

namespace swp {

/// `bytes` of page-locked host memory, owned: move-only, freed (cudaFreeHost) on destruction.
/// Copies from it to the GPU on a stream are truly asynchronous (pageable memory makes
/// cudaMemcpyAsync stage through a driver buffer and block the CPU).
///
/// Errors: the constructor throws CudaError when the allocation fails (no GPU, out of memory).
/// Example:
/// ```
/// swp::PinnedBuffer staging(batch_bytes);
/// std::span<float> x = staging.as<float>();
/// cudaMemcpyAsync(device_x, x.data(), x.size_bytes(), cudaMemcpyHostToDevice, s->native_handle());
/// ```
class PinnedBuffer {
 public:
  PinnedBuffer() noexcept = default;
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    PinnedBuffer(std::move(other)).swap(*this);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The buffer as whole elements of T (T trivially copyable; the tail that does not fill one
  /// is left out).
  template <class T>
  [[nodiscard]] std::span<T> as() const noexcept {
    return {reinterpret_cast<T*>(data_), size_ / sizeof(T)};
  }

  void swap(PinnedBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace swp
