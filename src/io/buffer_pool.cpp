#include "swp/io/detail/buffer_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "swp/device/backends.hpp"

namespace swp::io::detail {

namespace {
constexpr std::size_t alignment = 4096;
constexpr std::size_t granule = std::size_t{64} << 10;  // sizes round up: fewer odd buffers

std::shared_ptr<void> allocate(std::size_t bytes, bool want_pinned, bool& pinned,
                               std::byte*& data) {
  // Page-locked memory comes from a registered backend that has some (libswp-cuda's, once a
  // program links it): libswp itself links no GPU runtime.
  if (want_pinned) {
    try {
      if (auto memory = swp::pinned_host_memory(bytes)) {
        data = memory.get();
        pinned = true;
        return memory;
      }
    } catch (const std::exception&) {
      // No GPU (or no page-locked memory left): plain memory still works, only slower H2D.
    }
  }
  pinned = false;
  void* p = std::aligned_alloc(alignment, bytes);
  if (p == nullptr) throw std::bad_alloc();
  data = static_cast<std::byte*>(p);
  return {p, [](void* q) { std::free(q); }};
}
}  // namespace

BufferPool::~BufferPool() {
  for (BatchBuffer* b : free_) delete b;
}

std::shared_ptr<BatchBuffer> BufferPool::acquire(std::size_t bytes) {
  bytes = std::max<std::size_t>((bytes + granule - 1) / granule * granule, granule);
  BatchBuffer* buffer = nullptr;
  {
    std::lock_guard lock(mutex_);
    // The smallest free buffer that fits; free ones too small are released, so a pool serving
    // growing batches does not keep buffers it will never hand out again.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if ((*it)->capacity >= bytes && (best == free_.end() || (*it)->capacity < (*best)->capacity))
        best = it;
    if (best != free_.end()) {
      buffer = *best;
      free_.erase(best);
      counts_.free = free_.size();
    } else if (!free_.empty()) {
      BatchBuffer* small = free_.front();
      free_.erase(free_.begin());
      counts_.allocated_bytes -= small->capacity;
      counts_.free = free_.size();
      delete small;
    }
  }
  if (buffer == nullptr) {
    auto fresh = std::make_unique<BatchBuffer>();
    fresh->owner = allocate(bytes, pinned_, fresh->pinned, fresh->data);
    fresh->capacity = bytes;
    buffer = fresh.release();
    std::lock_guard lock(mutex_);
    counts_.allocated += 1;
    counts_.allocated_bytes += bytes;
  }
  // The deleter holds the pool: a batch may outlive the loader that made it.
  return {buffer, [pool = shared_from_this()](BatchBuffer* b) { pool->give_back(b); }};
}

void BufferPool::give_back(BatchBuffer* buffer) noexcept {
  {
    const std::lock_guard lock(mutex_);
    try {
      free_.push_back(buffer);
      counts_.free = free_.size();
      return;
    } catch (...) {
      // No memory to keep it (std::bad_alloc growing free_; this runs in a shared_ptr's
      // deleter, which must not throw): it is freed instead, the pool one buffer smaller.
      counts_.allocated_bytes -= buffer->capacity;
    }
  }
  delete buffer;  // without the lock: the backend's free of pinned memory may take a while
}

BufferPool::Counts BufferPool::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace swp::io::detail
