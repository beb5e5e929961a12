#pragma once
// BlockPool: memory blocks kept and handed out again, so that an operation allocates and frees
// nothing once the pool holds what was in flight at once (libswp-nccl's private header: its
// pinned bounce buffers and device scratch space). No CUDA here: the owner passes how a block
// is made and freed, and tests count them.

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace swp::detail {

/// Blocks by size class (the next power of two, at least 256 bytes): take() hands out a block
/// given back earlier, or makes one; give() keeps it for the next take(). Nothing is freed
/// before the pool goes (its destructor frees every block given back), so the pool holds the
/// most that was taken at once, rounded up to the classes. Thread-safe: calls take a lock.
/// Blocks must be given back only when nothing uses them any more (the communicator gives an
/// operation's back once the GPU finished it).
class BlockPool {
 public:
  /// Makes a block of `bytes` (throws when it cannot, e.g. CommError with CUDA's error).
  using Allocate = std::function<void*(std::size_t bytes)>;
  /// Frees a block made by Allocate (in the destructor only).
  using Free = std::function<void(void* block)>;

  struct Block {
    void* data = nullptr;
    std::size_t bytes = 0;  // its size class: at least what was asked for
  };

  BlockPool(Allocate allocate, Free free)
      : allocate_(std::move(allocate)), free_(std::move(free)) {}
  ~BlockPool() {
    for (auto& [bytes, blocks] : spare_)
      for (void* block : blocks) free_(block);
  }
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  /// A block of at least `bytes` (> 0).
  Block take(std::size_t bytes) {
    const std::size_t size = class_of(bytes);
    {
      std::lock_guard lock(mutex_);
      auto& spare = spare_[size];
      if (!spare.empty()) {
        void* block = spare.back();
        spare.pop_back();
        return {block, size};
      }
    }
    // Made outside the lock: cudaMallocHost takes long and must not hold up give().
    void* block = allocate_(size);
    std::lock_guard lock(mutex_);
    ++allocations_;
    return {block, size};
  }

  /// Keeps `block` (from take()) for a later take().
  void give(Block block) {
    if (block.data == nullptr) return;
    std::lock_guard lock(mutex_);
    spare_[block.bytes].push_back(block.data);
  }

  /// How many blocks the pool has made so far.
  [[nodiscard]] std::size_t allocations() const {
    std::lock_guard lock(mutex_);
    return allocations_;
  }

  /// The size class of `bytes`: the next power of two, at least 256.
  static std::size_t class_of(std::size_t bytes) noexcept {
    std::size_t size = 256;
    while (size < bytes) size *= 2;
    return size;
  }

 private:
  Allocate allocate_;
  Free free_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> spare_;  // by size class
  std::size_t allocations_ = 0;
};

}  // namespace swp::detail
