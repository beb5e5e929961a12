#pragma once
// WorkStealingQueue: a bounded FIFO ring with one producer (its owner) and many consumers.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace swp::detail {

/// A thread's local run queue in ThreadPoolScheduler: a bounded ring of pointers that only its
/// owner pushes to (at the tail) and that the owner and any thief pop from (at the head, oldest
/// first). Never allocates; `push` refuses when full and the caller overflows elsewhere.
///
/// Why a FIFO ring and not a Chase-Lev deque (owner LIFO, thieves FIFO): the scheduler's
/// runnables are lanes that re-post themselves after every step, and a LIFO owner end would
/// run the newest one again and again while older ones wait for a thief that may not come
/// (two cores: often none). Locality, the reason for LIFO, comes from the scheduler's "next"
/// slot instead. A bounded ring also needs no growth, so no retired buffers to reclaim and no
/// allocation on `post` (Runnable's contract); with one kind of pop there is no owner/thief
/// race on the last element to reason about: every pop is one compare-and-swap on the head.
/// The price is that the owner's pop is a CAS (a Chase-Lev pop is a fence, about the same).
///
/// Counters are 64-bit and never wrap in practice, so a stale head can never be mistaken for
/// a current one (no ABA).
template <class T, std::size_t Capacity = 256>
class WorkStealingQueue {
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0,
                "the capacity is a power of two (cells are indexed with a mask)");

 public:
  static constexpr std::size_t capacity = Capacity;

  /// Appends `item` at the tail. Owner thread only. Returns false, queuing nothing, when full.
  bool push(T* item) noexcept {
    // relaxed: only this thread stores tail_.
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    // acquire: pairs with the release of a consumer's head_ CAS, so that consumer's read of the
    // cell about to be reused happened before the store below overwrites it.
    if (tail - head_.load(std::memory_order_acquire) >= Capacity) return false;
    // relaxed: published by the release store of tail_ below.
    cells_[tail & mask].store(item, std::memory_order_relaxed);
    // release: a consumer that reads the new tail (acquire) sees the cell, and everything the
    // owner wrote before posting (the runnable's own state).
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  /// Removes and returns the oldest item, or nullptr when empty. Any thread (owner or thief).
  T* pop() noexcept {
    // relaxed: a stale head only makes the CAS below fail and reload it.
    std::uint64_t head = head_.load(std::memory_order_relaxed);
    for (;;) {
      // seq_cst (acquire would do for the cell): a thread that registered as a waiter and then
      // looks for work must see a push whose owner then fenced and found no waiter; the fence
      // rules of the memory model promise that only to a seq_cst load.
      const std::uint64_t tail = tail_.load(std::memory_order_seq_cst);
      if (head == tail) return nullptr;
      // relaxed: the acquire on tail_ above made the owner's store of this cell visible, and the
      // CAS below only succeeds while head_ == head, during which the owner cannot reuse it.
      T* item = cells_[head & mask].load(std::memory_order_relaxed);
      // release on success: the owner's acquire load of head_ in push() then knows this read of
      // the cell is done. relaxed on failure: `head` is just reloaded.
      if (head_.compare_exchange_weak(head, head + 1, std::memory_order_release,
                                      std::memory_order_relaxed))
        return item;
    }
  }

  /// How many items the ring held a moment ago. Any thread; exact only when no thread pushes
  /// or pops (a thief uses it to leave an owner its last item).
  [[nodiscard]] std::size_t size() const noexcept {
    // relaxed head: a hint; the pop that may follow re-validates.
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    // seq_cst: as in pop(), a thread about to park must see a fenced push.
    const std::uint64_t tail = tail_.load(std::memory_order_seq_cst);
    return tail > head ? static_cast<std::size_t>(tail - head) : 0;
  }

  /// Whether the ring looked empty. Any thread; exact only when no thread pushes or pops.
  [[nodiscard]] bool empty() const noexcept {
    // relaxed head: a stale (smaller) head can only make the ring look non-empty.
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    // seq_cst: as in pop(), the re-check of a thread about to park must see a fenced push.
    return tail_.load(std::memory_order_seq_cst) == head;
  }

 private:
  static constexpr std::uint64_t mask = Capacity - 1;

  // Consumers write head_ and only the owner writes tail_: separate cache lines, so a thief's
  // CAS does not invalidate the line the owner pushes through.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  alignas(64) std::array<std::atomic<T*>, Capacity> cells_{};
};

}  // namespace swp::detail
