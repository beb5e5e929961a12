#include "swp/async/fiber_bridge.hpp"
#include "swp/async/detail/sanitizers.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/fiber.hpp>
#include <cerrno>
#if SWP_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <vector>

namespace swp::detail {

namespace ctx = boost::context;

// FiberRun keeps each handle in a pointer-sized byte array (its header stays free of Boost).
static_assert(sizeof(ctx::fiber) == sizeof(void*) && alignof(ctx::fiber) <= alignof(void*),
              "boost::context::fiber is no longer one pointer: resize FiberRun's handles");

namespace {

thread_local FiberRun* current = nullptr;

// Thrown from park() into a parked fiber whose FiberRun is destroyed; caught at the bottom of
// the fiber's stack. Not a std::exception, so a body catching those lets it pass.
struct FiberUnwind {};

// AddressSanitizer must know which stack a thread runs on: an exception thrown on a stack it
// does not know leaves the unwound frames' redzones poisoned (it cannot clean a stack of
// unknown extent), and later frames at those addresses then fail as false overflows. Debian's
// Boost.Context does not annotate its switches, so the bridge does, around each of its own.
// Before a switch: `fake` saves this side's fake stack (nullptr: this side ends for good).
void switching_to(void** fake, const void* bottom, std::size_t size) noexcept {
#if SWP_ASAN
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}
// After a switch, on the new stack: the stack we came from, if the caller wants it.
void switched(void* fake, const void** from, std::size_t* from_size) noexcept {
#if SWP_ASAN
  __sanitizer_finish_switch_fiber(fake, from, from_size);
#else
  (void)fake, (void)from, (void)from_size;
#endif
}
// A stack going back to the pool forgets the poison of frames that never returned (those
// below a switch out of a finished fiber).
void forget_frames(const ctx::stack_context& stack) noexcept {
#if SWP_ASAN
  ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(stack.sp) - stack.size, stack.size);
#else
  (void)stack;
#endif
}

std::size_t page_size() noexcept {
  static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// Stacks are mmap'd with one PROT_NONE page below the usable part: an overflow faults there
// instead of running into the heap. A stack_context's `size` is the usable part; its mapping
// starts one page below `sp - size`.
ctx::stack_context map_stack(std::size_t usable) {
  const std::size_t guard = page_size();
  void* base = ::mmap(nullptr, usable + guard, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (base == MAP_FAILED)
    throw std::system_error(errno, std::generic_category(),
                            "swp: cannot map a fiber stack of " + std::to_string(usable) + " bytes");
  if (::mprotect(base, guard, PROT_NONE) != 0) {
    const int error = errno;
    ::munmap(base, usable + guard);
    throw std::system_error(error, std::generic_category(),
                            "swp: cannot protect the guard page of a fiber stack");
  }
  ctx::stack_context stack;
  stack.size = usable;
  stack.sp = static_cast<char*>(base) + guard + usable;  // stacks grow down
  return stack;
}

void unmap_stack(const ctx::stack_context& stack) noexcept {
  const std::size_t guard = page_size();
  ::munmap(static_cast<char*>(stack.sp) - stack.size - guard, stack.size + guard);
}

// Freed stacks, any size; bounded, since a pipeline only needs as many as bodies in flight.
// Recycling matters: mapping, protecting and unmapping a stack are three system calls, more
// than most blocking bodies cost.
struct StackPool {
  std::mutex mutex;
  std::vector<ctx::stack_context> free;
  static constexpr std::size_t max_kept = 64;

  ~StackPool() {
    for (auto& s : free) unmap_stack(s);
  }
};

StackPool& pool() {
  static StackPool p;
  return p;
}

// Boost.Context's StackAllocator for one fiber: a pooled stack of `size` usable bytes.
class PooledStack {
 public:
  explicit PooledStack(std::size_t size) : size_(size) {}

  ctx::stack_context allocate() {
    {
      auto& p = pool();
      std::lock_guard lock(p.mutex);
      for (auto it = p.free.begin(); it != p.free.end(); ++it) {
        if (it->size != size_) continue;
        auto stack = *it;
        p.free.erase(it);
        return stack;
      }
    }
    return map_stack(size_);
  }

  void deallocate(ctx::stack_context& stack) noexcept {
    forget_frames(stack);
    auto& p = pool();
    {
      std::lock_guard lock(p.mutex);
      if (p.free.size() < StackPool::max_kept) {
        p.free.push_back(stack);
        return;
      }
    }
    unmap_stack(stack);
  }

 private:
  std::size_t size_;
};

ctx::fiber& handle(unsigned char* bytes) noexcept {
  return *std::launder(reinterpret_cast<ctx::fiber*>(bytes));
}

}  // namespace

std::size_t usable_fiber_stack(std::size_t requested) {
  if (requested < min_fiber_stack)
    throw std::invalid_argument("swp: fiber stack size " + std::to_string(requested) +
                                " bytes is below the minimum of " +
                                std::to_string(min_fiber_stack) + " (swp::min_fiber_stack)");
  const std::size_t page = page_size();
  return (requested + page - 1) / page * page;
}

FiberRun::FiberRun(Body body, void* arg, std::size_t stack_size) : body_(body), arg_(arg) {
  PooledStack allocator(usable_fiber_stack(stack_size));
  const ctx::stack_context stack = allocator.allocate();
  fiber_stack_ = static_cast<char*>(stack.sp) - stack.size;
  fiber_stack_size_ = stack.size;
  // Constructing the fiber throws nothing more: the stack is already there (preallocated).
  new (fiber_) ctx::fiber(std::allocator_arg, ctx::preallocated(stack.sp, stack.size, stack),
                          std::move(allocator), [this](ctx::fiber&& caller) {
                            handle(caller_) = std::move(caller);
                            run_on_fiber();
                            return std::move(handle(caller_));
                          });
  new (caller_) ctx::fiber();
}

void FiberRun::run_on_fiber() {
  switched(nullptr, &driver_stack_, &driver_stack_size_);
  try {
    if (!unwinding_) body_(arg_);  // catches everything but FiberUnwind
  } catch (const FiberUnwind&) {
  }
  finished_ = true;
  switching_to(nullptr, driver_stack_, driver_stack_size_);  // this stack's last switch
}

FiberRun::~FiberRun() {
  // A parked (or never started) fiber is resumed once more to unwind: park() throws
  // FiberUnwind, its frames unwind to run_on_fiber, and the fiber ends.
  if (!finished_) {
    unwinding_ = true;
    resume();
  }
  handle(fiber_).~fiber();  // both empty by now
  handle(caller_).~fiber();
}

bool FiberRun::resume() {
  FiberRun* outer = std::exchange(current, this);
  void* fake = nullptr;
  switching_to(&fake, fiber_stack_, fiber_stack_size_);
  handle(fiber_) = std::move(handle(fiber_)).resume();
  switched(fake, nullptr, nullptr);
  current = outer;
  return finished_;
}

void FiberRun::park() {
  if (unwinding_) throw FiberUnwind{};  // a body swallowed the unwind and waits again
  void* fake = nullptr;
  switching_to(&fake, driver_stack_, driver_stack_size_);
  handle(caller_) = std::move(handle(caller_)).resume();
  // Resumed, perhaps by a driver on another thread: its stack is the one to return to.
  switched(fake, &driver_stack_, &driver_stack_size_);
  if (unwinding_) throw FiberUnwind{};
}

FiberRun* current_fiber() noexcept { return current; }

void rethrow_if_fiber_unwind() {
  try {
    throw;
  } catch (const FiberUnwind&) {
    throw;
  } catch (...) {
  }
}

}  // namespace swp::detail
