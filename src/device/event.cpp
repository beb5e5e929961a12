#include "swp/device/event.hpp"

#include "swp/async/detail/sorted_list.hpp"

#include <cassert>
#include <utility>

namespace swp {

Event::~Event() {
  // Pooled nodes belong to the event; nodes of the EventWait& form belong to their waiters,
  // which must have removed them (the event outlives its registrations).
  for (EventWait* node = head_; node != nullptr;) {
    EventWait* next = node->next_;
    assert(node->pooled_ && "an Event destroyed while a waiter's own node is registered");
    if (node->pooled_) delete node;
    node = next;
  }
  while (pool_ != nullptr) delete std::exchange(pool_, pool_->next_);
}

Clock::time_point Event::completed_at(std::uint64_t generation) const noexcept {
  return Clock::time_point(Clock::duration(
      when_[generation % remembered].load(std::memory_order_acquire)));
}

// Inserts from the tail: a new registration usually waits for the newest generation.
void Event::link(EventWait& node) noexcept {
  detail::insert_sorted_from_tail(head_, tail_, node, &EventWait::generation_, &EventWait::prev_,
                                  &EventWait::next_);
  node.linked_ = true;
}

void Event::unlink(EventWait& node) noexcept {
  detail::unlink_from(head_, tail_, node, &EventWait::prev_, &EventWait::next_);
  node.linked_ = false;
}

void Event::to_pool(EventWait& node) noexcept {
  node.waiter_ = nullptr;
  node.next_ = pool_;
  pool_ = &node;
}

// A callback runs with lock_ released, after its node left the list. The waiter may reuse or
// free what the callback touches only once it returned, so a remover waits for it — unless the
// remover is that callback's own thread (a waiter removing itself from inside its callback, or
// from a nested one): waiting there would never end, and the caller is the callback's frame.
template <class InFlight>
void Event::wait_out_callback(Lock& lock, InFlight in_flight) noexcept {
  if (!notifying_ || notifier_ == std::this_thread::get_id()) return;
  while (in_flight()) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
}

bool Event::add_waiter(std::uint64_t generation, EventWait& node) noexcept {
  std::lock_guard lock(lock_);
  assert(!node.linked_ && "an EventWait registered twice");
  // Checked under lock_, which complete() holds while it publishes completed_: either this
  // sees the generation reached, or complete() sees the node in the list.
  if (reached(generation)) return false;
  node.generation_ = generation;
  link(node);
  return true;
}

bool Event::remove_waiter(EventWait& node) noexcept {
  Lock lock(lock_);
  if (node.linked_) {
    unlink(node);
    return true;
  }
  wait_out_callback(lock, [&] { return in_flight_ == &node; });
  return false;
}

bool Event::add_waiter(std::uint64_t generation, EventWaiter& w) {
  {
    std::lock_guard lock(lock_);
    if (reached(generation)) return false;
    if (EventWait* node = pool_) {
      pool_ = node->next_;
      node->waiter_ = &w;
      node->generation_ = generation;
      link(*node);
      return true;
    }
  }
  // The pool is empty: a new node, allocated outside the spin lock. It stays with the event
  // for its lifetime, so the allocations stop once the pool covers the most registrations
  // this event ever held at once.
  auto* node = new EventWait(w);
  node->pooled_ = true;
  node->generation_ = generation;
  std::lock_guard lock(lock_);
  if (reached(generation)) {
    to_pool(*node);
    return false;
  }
  link(*node);
  return true;
}

void Event::remove_waiter(EventWaiter& w) noexcept {
  Lock lock(lock_);
  for (EventWait* node = head_; node != nullptr;) {
    EventWait* next = node->next_;
    if (node->pooled_ && node->waiter_ == &w) {
      unlink(*node);
      to_pool(*node);
    }
    node = next;
  }
  // A pooled node in flight is still the event's (it returns to the pool after its callback),
  // so reading its fields here is safe.
  wait_out_callback(lock, [&] {
    return in_flight_ != nullptr && in_flight_->pooled_ && in_flight_->waiter_ == &w;
  });
}

std::exception_ptr Event::error(std::uint64_t generation) const noexcept {
  // acquire: fail() stores failed_last_ after failure_ (both under lock_), release.
  const std::uint64_t last = failed_last_.load(std::memory_order_acquire);
  if (last == 0 || generation > last) return nullptr;
  Lock lock(lock_);
  if (generation < failed_first_.load(std::memory_order_relaxed)) return nullptr;
  return failure_;
}

void Event::fail(std::uint64_t generation, Clock::time_point when,
                 std::exception_ptr error) noexcept {
  {
    std::lock_guard lock(lock_);
    if (failed_last_.load(std::memory_order_relaxed) == 0 ||
        generation < failed_first_.load(std::memory_order_relaxed))
      failed_first_.store(generation, std::memory_order_relaxed);
    failure_ = std::move(error);
    if (generation > failed_last_.load(std::memory_order_relaxed))
      failed_last_.store(generation, std::memory_order_release);
  }
  complete(generation, when);  // published before: a waiter that sees it reached sees why
}

void Event::complete(std::uint64_t generation, Clock::time_point when) noexcept {
  Lock lock(lock_);
  when_[generation % remembered].store(when.time_since_epoch().count(),
                                       std::memory_order_release);
  // release: whoever sees reached(generation) also sees the completion time and everything the
  // stream did before completing. Under lock_, so add_waiter cannot miss it (see there).
  if (generation > completed_.load(std::memory_order_relaxed))
    completed_.store(generation, std::memory_order_release);
  // Only one thread calls waiters at a time. A completion arriving meanwhile (the event was
  // re-recorded on another stream, or a callback completed it again) has published completed_
  // above; the loop below reads it again before each waiter, so none is missed. This keeps at
  // most one callback in flight per event: what remove_waiter waits out.
  if (notifying_) return;
  notifying_ = true;
  notifier_ = std::this_thread::get_id();
  // The list is sorted by generation, so the reached waiters are at its head.
  while (head_ != nullptr && head_->generation_ <= completed_.load(std::memory_order_relaxed)) {
    EventWait* node = head_;
    unlink(*node);
    // Read before unlocking: once its callback returned, a node of the EventWait& form may be
    // reused or freed by its waiter, so the event no longer touches it.
    const bool pooled = node->pooled_;
    EventWaiter* waiter = node->waiter_;
    in_flight_ = node;
    lock.unlock();
    waiter->event_completed();
    lock.lock();
    in_flight_ = nullptr;
    if (pooled) to_pool(*node);
  }
  notifying_ = false;
  notifier_ = std::thread::id();
}

}  // namespace swp
