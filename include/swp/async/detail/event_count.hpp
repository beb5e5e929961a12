#pragma once
// EventCount: lets a thread sleep until a condition it checked may have changed, without
// lost wake-ups, at the cost of one fence and one load for a notifier when nobody sleeps.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "swp/async/detail/fence.hpp"

namespace swp::detail {

/// The classic two-phase wait (Folly's and Eigen's EventCount): a waiter registers with
/// `prepare_wait()`, re-checks its condition, then either `cancel_wait()`s (the condition
/// holds) or `commit_wait(key)`s, which sleeps until a notification issued after the
/// registration. A notifier makes the condition true, then calls `notify_one()` or
/// `notify_all()`. Whatever the interleaving, a waiter that found the condition false in its
/// re-check is woken by a notify that follows the change:
///
/// ```
/// // waiter                                    // notifier
/// while (!ready()) {                           flag.store(true);
///   auto key = ec.prepare_wait();              ec.notify_all();
///   if (ready()) { ec.cancel_wait(); break; }
///   ec.commit_wait(key);
/// }
/// ```
///
/// One 64-bit word holds an epoch (bumped by every notification that finds someone to wake),
/// the number of registered waiters, and the number of wake-ups issued that their waiters
/// have not consumed yet. A notify returns after one fence and one load when every registered
/// waiter is already being woken, in particular when nobody waits: a burst of notifications
/// while one thread is waking costs one system call, not one each. Sleeping is a futex wait on
/// the epoch's half of the word; deadlines are absolute on the steady clock, so a timed wait
/// reads no clock.
///
/// Each waiter's condition loads come after its registration and each notifier's condition
/// store before its notify's fence: those are the two halves of a store-buffering (Dekker)
/// pattern, which only seq_cst operations and fences order.
class EventCount {
 public:
  /// What `prepare_wait` hands to `commit_wait`: the epoch at registration.
  class Key {
    friend class EventCount;
    explicit Key(std::uint32_t epoch) noexcept : epoch_(epoch) {}
    std::uint32_t epoch_;
  };

  EventCount() noexcept = default;
  EventCount(const EventCount&) = delete;
  EventCount& operator=(const EventCount&) = delete;

  /// Registers the calling thread as a waiter. Follow with a re-check of the condition, then
  /// exactly one of `cancel_wait()` or `commit_wait*()`.
  [[nodiscard]] Key prepare_wait() noexcept {
    // seq_cst: the registration must precede the caller's re-check of its condition in the
    // single total order, so a notifier that does not see it has stored the condition first.
    const std::uint64_t prev = state_.fetch_add(one_waiter, std::memory_order_seq_cst);
    return Key(static_cast<std::uint32_t>(prev >> epoch_shift));
  }

  /// Withdraws a registration whose re-check found the condition true.
  void cancel_wait() noexcept { leave(); }

  /// Sleeps until a notification issued after `prepare_wait()` (at once if one was).
  void commit_wait(Key key) noexcept;

  /// As `commit_wait`, but gives up at `deadline` (steady clock, absolute). Returns false
  /// when the deadline passed without a notification. `time_point::max()` waits untimed.
  bool commit_wait_until(Key key, std::chrono::steady_clock::time_point deadline) noexcept;

  /// Wakes one registered waiter, unless each already has a wake-up on its way. Returns
  /// whether any waiter was registered (so one is or will be awake).
  bool notify_one() noexcept {
    seq_cst_fence();
    return notify_one_after_fence();
  }

  /// Wakes every registered waiter. Returns whether any was registered.
  bool notify_all() noexcept {
    seq_cst_fence();
    return notify_all_after_fence();
  }

  /// `notify_one` for a caller that made its condition true and then issued a seq_cst fence,
  /// or made it true with a seq_cst read-modify-write of the variable waiters re-check.
  bool notify_one_after_fence() noexcept {
    // seq_cst: after a fence relaxed would do; after a seq_cst read-modify-write, only a
    // seq_cst load is ordered behind it (and on x86 or ARMv8 it costs what a plain load does).
    const std::uint64_t s = state_.load(std::memory_order_seq_cst);
    if (waiters(s) == 0) return false;
    if (signals(s) < waiters(s)) wake(1);
    return true;
  }

  /// `notify_all` for a caller that ordered its condition change as for notify_one_after_fence.
  bool notify_all_after_fence() noexcept {
    const std::uint64_t s = state_.load(std::memory_order_seq_cst);  // as in notify_one
    if (waiters(s) == 0) return false;
    if (signals(s) < waiters(s)) wake(all);
    return true;
  }

  /// Registered waiters (for tests and diagnostics; stale as soon as it returns).
  [[nodiscard]] unsigned waiting() const noexcept {
    return waiters(state_.load(std::memory_order_relaxed));
  }

 private:
  // Layout: waiters in bits 0-15, unconsumed wake-ups in bits 16-31, epoch in bits 32-63 (the
  // futex word: its address is the word's upper half).
  static constexpr std::uint64_t one_waiter = 1;
  static constexpr std::uint64_t one_signal = std::uint64_t{1} << 16;
  static constexpr int epoch_shift = 32;
  static constexpr std::uint64_t one_epoch = std::uint64_t{1} << epoch_shift;
  static constexpr unsigned all = 0xffff;

  static unsigned waiters(std::uint64_t s) noexcept { return static_cast<unsigned>(s & 0xffff); }
  static unsigned signals(std::uint64_t s) noexcept {
    return static_cast<unsigned>((s >> 16) & 0xffff);
  }

  // Slow path of a notify: bumps the epoch, counts up to `n` wake-ups for waiters not yet
  // being woken, and issues them. Out of line: it makes a system call.
  void wake(unsigned n) noexcept;
  // A waiter leaves (woken, timed out or cancelled): one waiter fewer, and one pending
  // wake-up consumed if any is pending.
  void leave() noexcept;
  std::uint32_t* epoch_word() noexcept;

  std::atomic<std::uint64_t> state_{0};
};

}  // namespace swp::detail
