#pragma once
// BufferPool: the reusable batch buffers — page-locked where a registered backend has such
// memory (libswp-cuda, and a GPU is there: swp::pinned_host_memory), 4 KiB-aligned host memory
// otherwise.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace swp::io::detail {

/// One buffer of the pool.
struct BatchBuffer {
  std::byte* data = nullptr;
  std::size_t capacity = 0;
  bool pinned = false;
  std::shared_ptr<void> owner;  ///< frees the memory (the backend's pinned block or the aligned)
};

/// Hands out buffers of at least the asked size; a buffer comes back when the last shared_ptr
/// to it goes (the batch and its copies), and is handed out again. Thread-safe.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  explicit BufferPool(bool pinned) : pinned_(pinned) {}
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  /// Every buffer is back by now: each one handed out holds the pool.
  ~BufferPool();

  std::shared_ptr<BatchBuffer> acquire(std::size_t bytes);

  struct Counts {
    std::uint64_t allocated = 0;        ///< buffers ever allocated
    std::uint64_t allocated_bytes = 0;  ///< bytes of the buffers alive (free or handed out)
    std::uint64_t free = 0;
  };
  [[nodiscard]] Counts counts() const;

 private:
  /// Keeps `buffer` for reuse, or frees it where the pool cannot grow to keep it.
  void give_back(BatchBuffer* buffer) noexcept;

  bool pinned_;
  mutable std::mutex mutex_;
  std::vector<BatchBuffer*> free_;
  Counts counts_;
};

}  // namespace swp::io::detail
