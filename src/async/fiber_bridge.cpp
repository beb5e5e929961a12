#include "swp/async/fiber_bridge.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/fiber.hpp>
#include <cerrno>
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
  // The fiber first (it may throw: bad size, no memory), then the empty caller handle the
  // fiber fills in when it starts.
  new (fiber_) ctx::fiber(std::allocator_arg, PooledStack(usable_fiber_stack(stack_size)),
                          [this](ctx::fiber&& caller) {
                            handle(caller_) = std::move(caller);
                            body_(arg_);  // catches everything but a forced unwind
                            finished_ = true;
                            return std::move(handle(caller_));
                          });
  new (caller_) ctx::fiber();
}

FiberRun::~FiberRun() {
  // Destroying a parked fiber resumes it with a forced unwind, which returns here once its
  // stack is unwound; it runs as the current fiber, like any resume.
  FiberRun* outer = std::exchange(current, this);
  handle(fiber_).~fiber();
  current = outer;
  handle(caller_).~fiber();
}

bool FiberRun::resume() {
  FiberRun* outer = std::exchange(current, this);
  handle(fiber_) = std::move(handle(fiber_)).resume();
  current = outer;
  return finished_;
}

void FiberRun::park() { handle(caller_) = std::move(handle(caller_)).resume(); }

FiberRun* current_fiber() noexcept { return current; }

void rethrow_if_fiber_unwind() {
  try {
    throw;
  } catch (const ctx::detail::forced_unwind&) {
    throw;
  } catch (...) {
  }
}

}  // namespace swp::detail
