#pragma once
// Recycling allocator for coroutine frames (private to the async layer).

#include <cstddef>

namespace swp::detail {

/// Allocates a coroutine frame of `size` bytes. Frames up to `max_pooled_frame` bytes come from
/// thread-local free lists (one per 64-byte size class), so a long pipeline run that creates
/// and destroys millions of task frames stops calling the global allocator after warm-up.
void* frame_allocate(std::size_t size);

/// Returns a frame. It may be freed on another thread than the one that allocated it: the
/// frame then joins this thread's free list, which is safe because lists hold plain memory.
void frame_deallocate(void* frame, std::size_t size) noexcept;

/// How many frames the calling thread allocated so far (recycled or not): what shows that an
/// operation made no coroutine frame.
[[nodiscard]] std::size_t frames_allocated_here() noexcept;

/// Whether frames are recycled at all: false in builds configured with pooled_frames off (the
/// default under sanitizers), where every frame goes back to operator delete, so that
/// AddressSanitizer reports a use of a frame after its coroutine ended.
[[nodiscard]] bool frames_pooled() noexcept;

inline constexpr std::size_t max_pooled_frame = 2048;

}  // namespace swp::detail
