#include "swp/async/detail/frame_allocator.hpp"

#include <array>
#include <new>

namespace swp::detail {

namespace {

constexpr std::size_t granule = 64;
constexpr std::size_t classes = max_pooled_frame / granule;
constexpr std::size_t max_cached_per_class = 512;  // bounds what an idle thread keeps

struct FreeNode {
  FreeNode* next;
};

// Set when this thread's cache has been destroyed (thread exit); frames freed after that, e.g.
// by static destructors, go straight to the global allocator. Trivial, so always accessible.
thread_local bool cache_gone = false;

// Per-thread cache. Destroyed at thread exit, returning everything to the global allocator.
struct FrameCache {
  std::array<FreeNode*, classes> head{};
  std::array<std::size_t, classes> count{};

  ~FrameCache() {
    cache_gone = true;
    for (auto* node : head) {
      while (node != nullptr) {
        FreeNode* next = node->next;
        ::operator delete(node);
        node = next;
      }
    }
  }
};

thread_local FrameCache cache;

constexpr std::size_t class_of(std::size_t size) { return (size + granule - 1) / granule - 1; }

}  // namespace

void* frame_allocate(std::size_t size) {
  if (size == 0 || size > max_pooled_frame || cache_gone) return ::operator new(size);
  const std::size_t c = class_of(size);
  if (FreeNode* node = cache.head[c]) {
    cache.head[c] = node->next;
    --cache.count[c];
    return node;
  }
  return ::operator new((c + 1) * granule);
}

void frame_deallocate(void* frame, std::size_t size) noexcept {
  if (size == 0 || size > max_pooled_frame || cache_gone) {
    ::operator delete(frame);
    return;
  }
  const std::size_t c = class_of(size);
  if (cache.count[c] >= max_cached_per_class) {
    ::operator delete(frame);
    return;
  }
  auto* node = static_cast<FreeNode*>(frame);
  node->next = cache.head[c];
  cache.head[c] = node;
  ++cache.count[c];
}

}  // namespace swp::detail
