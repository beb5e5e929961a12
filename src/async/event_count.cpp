#include "swp/async/detail/event_count.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <climits>
#include <ctime>

namespace swp::detail {

namespace {

// The futex calls, on a 32-bit word. FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC
// deadline, the clock behind std::chrono::steady_clock on Linux, so a timed wait needs no
// clock reading to compute a relative timeout. Private: the word is never shared between
// processes, which lets the kernel skip the page lookup.

// Returns false when the wait timed out; true when woken, interrupted, or when the word no
// longer held `expected` (the caller re-checks in every case).
bool futex_wait(std::uint32_t* word, std::uint32_t expected, const timespec* deadline) noexcept {
  const long rc = syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected,
                          deadline, nullptr, FUTEX_BITSET_MATCH_ANY);
  return rc == 0 || errno != ETIMEDOUT;
}

void futex_wake(std::uint32_t* word, int n) noexcept {
  syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, nullptr, nullptr, 0);
}

timespec to_timespec(std::chrono::steady_clock::time_point t) noexcept {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  if (ns.count() <= 0) return timespec{0, 0};  // long past: times out at once
  return timespec{static_cast<time_t>(ns.count() / 1'000'000'000),
                  static_cast<long>(ns.count() % 1'000'000'000)};
}

}  // namespace

static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                  sizeof(std::atomic<std::uint64_t>) == sizeof(std::uint64_t),
              "the futex waits on half of the state word's object representation");

std::uint32_t* EventCount::epoch_word() noexcept {
  // The epoch is the word's upper half: at byte offset 4 on a little-endian machine. Only the
  // kernel reads through this pointer (it compares the half with the key before sleeping);
  // C++ code accesses the word only as the atomic it is.
  constexpr std::size_t offset = std::endian::native == std::endian::little ? 4 : 0;
  return reinterpret_cast<std::uint32_t*>(reinterpret_cast<char*>(&state_) + offset);
}

void EventCount::wake(unsigned n) noexcept {
  // relaxed: the CAS below re-validates the value.
  std::uint64_t s = state_.load(std::memory_order_relaxed);
  unsigned added = 0;
  for (;;) {
    const unsigned uncovered = waiters(s) - signals(s);
    if (waiters(s) == 0 || uncovered == 0) return;  // every waiter is being woken already
    added = n < uncovered ? n : uncovered;
    // release: a waiter whose acquire load sees the new epoch sees what the notifier did
    // before notifying (its condition change). relaxed on failure: just retry.
    if (state_.compare_exchange_weak(s, s + one_epoch + added * one_signal,
                                     std::memory_order_release, std::memory_order_relaxed))
      break;
  }
  futex_wake(epoch_word(), n == all ? INT_MAX : static_cast<int>(added));
}

void EventCount::leave() noexcept {
  std::uint64_t s = state_.load(std::memory_order_relaxed);  // re-validated by the CAS
  // seq_cst: a notifier that still counted this waiter skipped its own wake-up only because
  // this one was on its way; the condition re-check after leaving must then see that
  // notifier's change, which needs this decrement in the single total order.
  while (!state_.compare_exchange_weak(
      s, s - one_waiter - (signals(s) > 0 ? one_signal : 0), std::memory_order_seq_cst,
      std::memory_order_relaxed)) {
  }
}

void EventCount::commit_wait(Key key) noexcept {
  // acquire: pairs with the release of the notification's CAS.
  while (static_cast<std::uint32_t>(state_.load(std::memory_order_acquire) >> epoch_shift) ==
         key.epoch_)
    futex_wait(epoch_word(), key.epoch_, nullptr);
  leave();
}

bool EventCount::commit_wait_until(Key key,
                                   std::chrono::steady_clock::time_point deadline) noexcept {
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    commit_wait(key);
    return true;
  }
  const timespec at = to_timespec(deadline);
  bool notified = true;
  // acquire: as in commit_wait.
  while (static_cast<std::uint32_t>(state_.load(std::memory_order_acquire) >> epoch_shift) ==
         key.epoch_) {
    if (!futex_wait(epoch_word(), key.epoch_, &at)) {
      // Timed out; a notification may have landed at the same moment: it counts.
      notified = static_cast<std::uint32_t>(state_.load(std::memory_order_acquire) >>
                                            epoch_shift) != key.epoch_;
      break;
    }
  }
  leave();
  return notified;
}

}  // namespace swp::detail
