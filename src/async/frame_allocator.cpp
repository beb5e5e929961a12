#include "swp/async/detail/frame_allocator.hpp"

#include <array>
#include <new>

// 0: every frame from operator new and back (meson's pooled_frames option, off under
// sanitizers), so that AddressSanitizer reports a use of a frame after its coroutine ended.
#ifndef SWP_POOLED_FRAMES
#define SWP_POOLED_FRAMES 1
#endif

namespace swp::detail {

namespace {

constexpr bool pooled = SWP_POOLED_FRAMES != 0;

constexpr std::size_t granule = 64;
constexpr std::size_t classes = max_pooled_frame / granule;
constexpr std::size_t max_cached_per_class = 512;  // bounds what an idle thread keeps

struct FreeNode {
  FreeNode* next;
};

// Per-thread free lists. Plain data, so accessing it costs no initialization check; the
// cleanup object below is touched only when a thread first caches a frame, and returns the
// thread's frames to the global allocator when the thread exits.
struct FrameCache {
  std::array<FreeNode*, classes> head;
  std::array<std::size_t, classes> count;
  bool cleanup_registered;
  bool gone;  // the thread is exiting: frames freed now (static destructors) bypass the cache
  std::size_t allocated;  // frames this thread allocated (frames_allocated_here)
};
[[gnu::tls_model("initial-exec")]] thread_local FrameCache cache{};

struct FrameCacheCleanup {
  ~FrameCacheCleanup() {
    cache.gone = true;
    for (auto*& node : cache.head) {
      while (node != nullptr) {
        FreeNode* next = node->next;
        ::operator delete(node);
        node = next;
      }
    }
  }
};
thread_local FrameCacheCleanup cleanup;

constexpr std::size_t class_of(std::size_t size) { return (size + granule - 1) / granule - 1; }

}  // namespace

void* frame_allocate(std::size_t size) {
  ++cache.allocated;
  if (!pooled || size == 0 || size > max_pooled_frame || cache.gone) return ::operator new(size);
  const std::size_t c = class_of(size);
  if (FreeNode* node = cache.head[c]) {
    cache.head[c] = node->next;
    --cache.count[c];
    return node;
  }
  return ::operator new((c + 1) * granule);
}

void frame_deallocate(void* frame, std::size_t size) noexcept {
  if (!pooled || size == 0 || size > max_pooled_frame || cache.gone) {
    ::operator delete(frame);
    return;
  }
  const std::size_t c = class_of(size);
  if (cache.count[c] >= max_cached_per_class) {
    ::operator delete(frame);
    return;
  }
  if (!cache.cleanup_registered) {
    cache.cleanup_registered = true;
    // Odr-using the thread_local constructs it, so its destructor runs at thread exit; the
    // empty asm keeps the use from being optimized away.
    asm volatile("" : : "r"(&cleanup) : "memory");
  }
  auto* node = static_cast<FreeNode*>(frame);
  node->next = cache.head[c];
  cache.head[c] = node;
  ++cache.count[c];
}

std::size_t frames_allocated_here() noexcept { return cache.allocated; }

bool frames_pooled() noexcept { return pooled; }

}  // namespace swp::detail
