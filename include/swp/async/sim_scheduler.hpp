#pragma once
// SimScheduler: one thread, virtual time, fully deterministic.

#include <cstdint>
#include <mutex>
#include <vector>

#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/scheduler.hpp"

namespace swp {

/// A discrete-event scheduler. Runnables run in FIFO order on the thread that calls
/// `drive_until`; timers (`post_at`) fire in (time, posting order) order; the virtual clock
/// advances to the next timer only when nothing is runnable. The same program run twice gives
/// the same interleaving and the same virtual timings.
///
/// `drive_until` returns false when `done()` is still false and nothing is runnable and no
/// timer is pending (a deadlock: the caller reports who waits on what), or when the next timer
/// lies past `deadline` (virtual time then stops at `deadline`).
///
/// Example:
/// ```
/// swp::SimScheduler sim;
/// sim.post_at(sim.now() + std::chrono::microseconds(300), work);  // runs at t = 300 us
/// sim.drive_until([&] { return finished; }, sim.now() + std::chrono::seconds(1));
/// ```
class SimScheduler final : public Scheduler {
 public:
  SimScheduler() = default;

  void post(Runnable& r) noexcept override;
  bool drive_until(const std::function<bool()>& done, Clock::time_point deadline) override;
  [[nodiscard]] Clock::time_point now() const override;
  [[nodiscard]] bool virtual_time() const noexcept override { return true; }

  /// Runs `r` when virtual time reaches `when` (at once if it already has). A timer's push may
  /// grow the heap (std::bad_alloc ends the process: noexcept).
  void post_at(Clock::time_point when, Runnable& r) noexcept;
  /// Disarms every pending post_at of `r`; true when one was pending. Runnables posted with
  /// post() are not touched.
  bool cancel_at(Runnable& r) noexcept;

  /// Virtual time elapsed since construction.
  [[nodiscard]] Clock::duration elapsed() const { return now() - Clock::time_point{}; }

 protected:
  void wake_drivers() noexcept override {}  // its only driver is the thread posting

 private:
  struct Timer {
    Clock::time_point when;
    std::uint64_t order;
    Runnable* runnable;
    bool operator>(const Timer& o) const {
      return when != o.when ? when > o.when : order > o.order;
    }
  };

  // One mutex for all state: the scheduler is single-threaded by design, the lock only keeps a
  // stray post from another thread from corrupting it (TSan would flag the logic error).
  mutable std::mutex mutex_;
  detail::IntrusiveFifo<Runnable, &Runnable::next_runnable> queue_;
  std::vector<Timer> timers_;  // a min-heap by (when, order): std::greater<>
  std::uint64_t timer_order_ = 0;
  Clock::time_point now_{};
};

}  // namespace swp
