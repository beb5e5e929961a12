#include "swp/async/detail/frame_allocator.hpp"
#include "swp/async/detail/sanitizers.hpp"

#include <doctest/doctest.h>

namespace test_frame_allocator {  // each test file's names apart (unity builds)

namespace {

// The address the allocator hands out for a frame of `size` right after one of the same size
// was returned.
struct Reuse {
  void* first;
  void* second;
};
Reuse allocate_twice(std::size_t size) {
  void* first = swp::detail::frame_allocate(size);
  swp::detail::frame_deallocate(first, size);
  void* second = swp::detail::frame_allocate(size);
  swp::detail::frame_deallocate(second, size);
  return {first, second};
}

}  // namespace

TEST_CASE("a pooled frame is reused; without pooling it goes back to operator delete") {
#if SWP_ASAN || SWP_TSAN
  CHECK_FALSE(swp::detail::frames_pooled());  // sanitizer builds must see every frame
#endif
  const Reuse reuse = allocate_twice(200);
  if (swp::detail::frames_pooled()) {
    CHECK(reuse.second == reuse.first);  // from this thread's free list
  } else {
    // Plain operator new/delete: under AddressSanitizer the freed frame sits in quarantine, so
    // a use of it after its coroutine ended is reported instead of hitting a recycled frame.
#if SWP_ASAN
    CHECK(reuse.second != reuse.first);
#endif
  }
}

TEST_CASE("frames larger than the pooled sizes are never recycled, and every frame is counted") {
  const std::size_t before = swp::detail::frames_allocated_here();
  allocate_twice(swp::detail::max_pooled_frame + 1);
  CHECK(swp::detail::frames_allocated_here() - before == 2);
}

}  // namespace test_frame_allocator
