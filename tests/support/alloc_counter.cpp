// The allocation counter of tests/support/alloc_counter.hpp. This translation unit replaces
// the global operator new/delete of the whole test executable (plain build) or installs the
// sanitizer allocation hook (ASan, TSan); nothing else in tests/ may do either.

#include "support/alloc_counter.hpp"
#include "swp/async/detail/sanitizers.hpp"

#include <atomic>
#include <cassert>
#include <cstdlib>
#include <new>

#if SWP_ASAN || SWP_TSAN
#define SWP_TEST_SANITIZER_HOOK 1
// From <sanitizer/allocator_interface.h>, which g++ does not ship; libasan and libtsan both
// export it. The hook runs on every allocation the sanitizer's allocator makes, malloc and
// operator new alike, after it made it.
extern "C" int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void*, std::size_t),
    void (*free_hook)(const volatile void*));
#endif

namespace swp::test {

namespace {

// Relaxed throughout: a test arms the counter while the threads it tracks are idle and reads
// the count after synchronizing with them (a join, a stream's synchronize — mutexes), which
// orders both the arming and their increments; the atomics only keep concurrent allocations of
// untracked threads from racing.
std::atomic<bool> armed{false};
std::atomic<std::size_t> counted{0};
std::atomic<std::size_t> largest{0};  // the size of the largest counted allocation
// Constant-initialized and trivial: reading it costs no TLS initialization, so it is safe in
// operator new on any thread at any time (also before main and at thread exit).
constinit thread_local bool tracked = false;
// FailNthAllocation's: allocations left before the one that fails (0: none fails), and
// whether it failed. Constant-initialized and trivial, as `tracked`.
constinit thread_local std::size_t fail_countdown = 0;
constinit thread_local bool fail_fired = false;

inline void count_allocation(std::size_t size) noexcept {
  if (!tracked || !armed.load(std::memory_order_relaxed)) return;
  counted.fetch_add(1, std::memory_order_relaxed);
  std::size_t seen = largest.load(std::memory_order_relaxed);
  while (size > seen && !largest.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
}

#ifdef SWP_TEST_SANITIZER_HOOK

void on_malloc(const volatile void*, std::size_t size) { count_allocation(size); }
void on_free(const volatile void*) {}
[[maybe_unused]] const int hook_installed =
    __sanitizer_install_malloc_and_free_hooks(&on_malloc, &on_free);

#else

// Counts down FailNthAllocation's allocations; throws at the one that fails.
inline void maybe_fail() {
  if (fail_countdown == 0 || --fail_countdown != 0) return;
  fail_fired = true;
  throw std::bad_alloc();
}

void* allocate(std::size_t size) {
  count_allocation(size);
  maybe_fail();
  if (size == 0) size = 1;
  for (;;) {
    if (void* p = std::malloc(size)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* allocate(std::size_t size, std::align_val_t alignment) {
  count_allocation(size);
  maybe_fail();
  if (size == 0) size = 1;
  auto align = static_cast<std::size_t>(alignment);
  if (align < sizeof(void*)) align = sizeof(void*);
  for (;;) {
    void* p = nullptr;
    if (posix_memalign(&p, align, size) == 0) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

template <class... Args>
void* allocate_nothrow(Args... args) noexcept {
  try {
    return allocate(args...);
  } catch (...) {
    return nullptr;
  }
}

#endif

}  // namespace

void track_allocations_on_this_thread(bool on) noexcept { tracked = on; }

AllocationCount::AllocationCount() noexcept : was_tracked_(tracked) {
  assert(!armed.load(std::memory_order_relaxed) && "one AllocationCount at a time");
  tracked = true;
  counted.store(0, std::memory_order_relaxed);
  largest.store(0, std::memory_order_relaxed);
  armed.store(true, std::memory_order_relaxed);
}

AllocationCount::~AllocationCount() {
  armed.store(false, std::memory_order_relaxed);
  tracked = was_tracked_;
}

std::size_t AllocationCount::allocations() const noexcept {
  return counted.load(std::memory_order_relaxed);
}

std::size_t AllocationCount::largest_allocation() const noexcept {
  return largest.load(std::memory_order_relaxed);
}

std::size_t AllocationCount::stop() noexcept {
  armed.store(false, std::memory_order_relaxed);
  return counted.load(std::memory_order_relaxed);
}

bool allocation_failures_injectable() noexcept {
#ifdef SWP_TEST_SANITIZER_HOOK
  return false;
#else
  return true;
#endif
}

FailNthAllocation::FailNthAllocation(std::size_t nth) noexcept {
  assert(fail_countdown == 0 && "one FailNthAllocation at a time per thread");
  fail_fired = false;
  fail_countdown = nth;
}

FailNthAllocation::~FailNthAllocation() { fail_countdown = 0; }

bool FailNthAllocation::fired() const noexcept { return fail_fired; }

}  // namespace swp::test

#ifndef SWP_TEST_SANITIZER_HOOK

// Every replaceable form, so that no allocation or deallocation reaches the library's own
// operators with memory from the other pair.
void* operator new(std::size_t size) { return swp::test::allocate(size); }
void* operator new[](std::size_t size) { return swp::test::allocate(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  return swp::test::allocate(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return swp::test::allocate(size, align);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return swp::test::allocate_nothrow(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return swp::test::allocate_nothrow(size);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return swp::test::allocate_nothrow(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return swp::test::allocate_nothrow(size, align);
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

#endif
