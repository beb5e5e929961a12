#pragma once
// AloneWindow: whether the thread that drives a pipeline runs its work alone for a while,
// because the runtime's workers take next to none of its short tasks (both release policies).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include "swp/engine/detail/instance.hpp"

namespace swp::detail {

/// With workers, for tasks shorter than moving one to another thread costs: whether the
/// workers take a share of them while the caller drives the pipeline. Where they take next to
/// none (the pool's thieves leave such tasks to their owner), the caller runs the tasks itself
/// anyway, and it may as well run them as with one thread — in place, without join counters
/// (FastPaths::uncounted). The window opens after a period of at least `default_period` in
/// which the tasks took under `default_task_time` each (the pool's move cost,
/// ThreadPoolScheduler) and at most one in `share` retired iterations had help
/// (IterationSync::helped), for `window` times as many admissions; then the workers are
/// offered the work again. Longer tasks stay on the general path: a parked worker may take a
/// few scheduler ticks to come back (4-12 ms measured on 2 vCPUs), which no short look can
/// tell from a worker that never will (docs/release.md, "The alone window").
///
/// Used on the driving thread only: the policy looks at each retired iteration once (look),
/// and counts the admissions it makes alone (take).
class AloneWindow {
 public:
  static constexpr std::chrono::milliseconds default_period{1};
  static constexpr std::chrono::nanoseconds default_task_time{250};
  static constexpr std::int64_t share = 16;
  static constexpr std::int64_t window = 32;
  static constexpr std::int64_t look_every = 32;  // retirements between clock reads (a power of 2)

  /// The period and task time every window's rule uses, process-wide (the defaults above).
  /// For tests: a shorter period and a longer task time open windows in short runs, and in
  /// the sanitizers' builds, where every task is many times slower. Set between runs.
  struct Thresholds {
    std::chrono::nanoseconds period = default_period;
    std::chrono::nanoseconds task_time = default_task_time;
  };
  static void set_thresholds(Thresholds thresholds) noexcept;
  [[nodiscard]] static Thresholds thresholds() noexcept;

  /// A run starts at iteration `base`, held by sync entry `base_entry`; `tasks` per iteration.
  void reset(std::int64_t base, std::size_t base_entry, std::size_t tasks) noexcept;
  /// Looks at the iterations retired since the last call, those before `oldest`, in the ring
  /// of `entries` (iteration i + 1 in the entry after i's). Help for an iteration retired
  /// while the window is open (one admitted before it opened, or handed over) closes it.
  /// Inline for what it does at most retirements (data-flow looks at each admission while a
  /// window is open, both policies at each retirement between windows): help closes an open
  /// window; between windows it counts. A period's first retirement and every look_every-th
  /// (the clock, the verdict) go out of line.
  void look(std::int64_t oldest, std::span<const IterationSync> entries) noexcept {
    while (looked_upto_ < oldest) {
      const bool open = left_ > 0;
      if (!open && (period_retired_ == 0 || ((period_retired_ + 1) & (look_every - 1)) == 0)) {
        look_between_windows(oldest, entries);
        return;
      }
      const bool helped = entries[looked_entry_].helped.load(std::memory_order_relaxed);
      ++looked_upto_;
      looked_entry_ = looked_entry_ + 1 == entries.size() ? 0 : looked_entry_ + 1;
      if (open) {
        if (helped) close();
      } else {
        ++period_retired_;
        period_helped_ += helped ? 1 : 0;
      }
    }
  }
  /// Skips the iterations retired since the last call, those before `oldest`, unlooked: while
  /// the caller ran all of them uncounted, nobody helped (ClockRelease, whose periods then
  /// admit and retire in one loop and reuse the entries before any look).
  void skip(std::int64_t oldest, std::size_t entries) noexcept {
    looked_entry_ = (looked_entry_ + static_cast<std::size_t>(oldest - looked_upto_)) % entries;
    looked_upto_ = oldest;
  }
  /// Admissions are left to make alone.
  [[nodiscard]] bool open() const noexcept { return left_ > 0; }
  /// How many (0 once closed).
  [[nodiscard]] std::int64_t left() const noexcept { return left_; }
  /// `admissions` made alone; false when the window has none left (or was closed).
  bool take(std::int64_t admissions) noexcept {
    left_ = left_ > admissions ? left_ - admissions : 0;
    return left_ > 0;
  }
  /// Closed early (something handed the work over to the general path).
  void close() noexcept { left_ = period_retired_ = 0; }

 private:
  // look() past the window: the periods' counts, which may open one.
  void look_between_windows(std::int64_t oldest, std::span<const IterationSync> entries) noexcept;
  // At every look_every-th retirement of a period: the period's verdict once it is long
  // enough, which may open a window (true).
  bool decide() noexcept;

  std::size_t tasks_ = 1;
  // The retired iterations looked at so far and the entry of the next; the period's
  // retirements, those helped, and when it began; the admissions left to make alone.
  std::int64_t looked_upto_ = 0;
  std::size_t looked_entry_ = 0;
  std::int64_t period_retired_ = 0;
  std::int64_t period_helped_ = 0;
  std::chrono::steady_clock::time_point period_since_;
  std::int64_t left_ = 0;
};

}  // namespace swp::detail
