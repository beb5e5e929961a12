#include "swp/async/fiber_bridge.hpp"

#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace swp::detail {

namespace {

thread_local FiberRun* current = nullptr;

// Freed stacks by size; bounded, since a pipeline only needs as many as bodies in flight.
struct StackPool {
  std::mutex mutex;
  std::vector<boost::context::stack_context> free;
  static constexpr std::size_t max_kept = 64;

  ~StackPool() {
    for (auto& s : free) std::free(static_cast<char*>(s.sp) - s.size);
  }
};

StackPool& pool() {
  static StackPool p;
  return p;
}

}  // namespace

FiberRun* current_fiber() noexcept { return current; }

FiberRun* exchange_current_fiber(FiberRun* run) noexcept {
  FiberRun* previous = current;
  current = run;
  return previous;
}

boost::context::stack_context FiberStacks::allocate() {
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
  void* base = std::malloc(size_);
  if (base == nullptr) throw std::bad_alloc();
  boost::context::stack_context stack;
  stack.size = size_;
  stack.sp = static_cast<char*>(base) + size_;  // stacks grow down
  return stack;
}

void FiberStacks::deallocate(boost::context::stack_context& stack) noexcept {
  auto& p = pool();
  {
    std::lock_guard lock(p.mutex);
    if (p.free.size() < StackPool::max_kept) {
      p.free.push_back(stack);
      return;
    }
  }
  std::free(static_cast<char*>(stack.sp) - stack.size);
}

}  // namespace swp::detail
