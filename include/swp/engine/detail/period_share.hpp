#pragma once
// PeriodShare: a clock period's ready instances, run in place by the thread that opened the
// period while any other thread may take the ones it has not reached yet.

#include <atomic>
#include <cstddef>
#include <limits>
#include <vector>

#include "swp/async/detail/run_queue_hooks.hpp"
#include "swp/async/scheduler.hpp"

namespace swp::detail {

class EngineCore;
struct Instance;

/// With workers, every ready instance of a clock period used to be posted to the opening
/// thread's queue and popped back (or stolen): about 12 ns of the caller's path per instance
/// on two threads against one (docs/benchmarks.md). Instead the period collects its ready
/// instances here, the share is offered (RunQueueHooks::offer: the opening thread's next work,
/// which a thief takes only from a thread that stopped making progress), the opening thread
/// claims and runs them one by one in place, and withdraws the share. A thread that took it
/// claims one instance per run and posts the share again before running it, so every
/// instance not claimed yet stays where some thread can take it: two instances of a period
/// that wait for each other cannot hang (tests/engine/test_pipeline_parallelism.cpp).
///
/// The owner may offer the share before it has added everything (the clock offers what a
/// period released before it asks the source, which may block) and add more later, then
/// seal it. A thread that took it and finds nothing to claim before the seal drops it (the
/// share is then in no queue, and that thread never touches it again); the seal sees the drop
/// and offers it again. Limit, seal and drop share one word, so the drop (a compare-and-swap
/// from the limit its claim saw) and the seal (an exchange) cannot miss each other.
///
/// Threads: the owner (the thread that opens periods) fills, offers, seals, claims and
/// withdraws; any thread that took the share runs it. The share is busy from an offer until
/// it is in no queue and no thread runs it: the owner frees it when it withdraws it
/// untouched, else the run that finds it sealed and empty does. Only a share that is not busy
/// is filled again, so its items are the owner's alone then.
class PeriodShare final : public Runnable {
 public:
  /// `hooks`: `scheduler`'s (run_queue_hooks_of), which offer and withdraw the share.
  PeriodShare(EngineCore& core, Scheduler& scheduler, RunQueueHooks& hooks) noexcept
      : core_(core), scheduler_(scheduler), hooks_(hooks) {}
  PeriodShare(const PeriodShare&) = delete;
  PeriodShare& operator=(const PeriodShare&) = delete;

  /// Some thread may still run it or find it queued. Any thread.
  [[nodiscard]] bool busy() const noexcept { return busy_.load(std::memory_order_acquire); }
  /// Owner, not busy: empty, with room for at least `wanted` instances, and twice the last
  /// room (up to `most`) if the last fill ran out of it. Allocates only to grow: once per run
  /// at most, and then only while its calls release more than the share holds.
  void start(std::size_t wanted, std::size_t most) {
    if (ran_out_ || items_.size() < wanted) [[unlikely]]
      grow(wanted, most);
    added_ = 0;
    offered_ = false;
    // relaxed: published by the offer (the scheduler's seq_cst exchange) to whoever takes it.
    state_.store(0, std::memory_order_relaxed);
    next_.store(0, std::memory_order_relaxed);
  }
  /// Owner: collects a ready instance; false when full (the caller posts it instead; the next
  /// start makes more room). Other threads see it once offered or sealed.
  bool add(Instance& in) noexcept {
    if (added_ == items_.size()) {
      ran_out_ = true;
      return false;
    }
    items_[added_++] = &in;
    return true;
  }
  [[nodiscard]] std::size_t added() const noexcept { return added_; }
  [[nodiscard]] Instance& item(std::size_t k) const noexcept { return *items_[k]; }
  /// Owner: between offer() and withdraw().
  [[nodiscard]] bool offered() const noexcept { return offered_; }

  /// Owner: offers what was added so far (RunQueueHooks::offer), `sealed` when nothing more will
  /// be added. False: not offered (then it is not busy, and the caller posts the instances).
  bool offer(bool sealed) noexcept;
  /// Owner, after offer(false): what was added since becomes claimable, and nothing more will
  /// be. False: a thread dropped the share and it could not be offered again; the share is
  /// free and the caller posts what claim() still gives (post_unclaimed).
  bool seal() noexcept;
  /// Owner, after its claims: true when no thread took the share (free again); false when
  /// one did (that thread frees it once it finds nothing left).
  bool withdraw() noexcept;
  /// Any thread: the next unclaimed instance, or nullptr.
  Instance* claim() noexcept {
    std::size_t seen = 0;
    return claim(seen);
  }

  /// A thread that took the share: claims one instance, posts the share again (for the rest),
  /// then runs it; with nothing left, frees the share (sealed) or drops it (not yet).
  void run() noexcept override;

 private:
  // state_: the number of claimable items, and two flags.
  static constexpr std::size_t sealed_bit = std::size_t{1}
                                            << (std::numeric_limits<std::size_t>::digits - 1);
  static constexpr std::size_t dropped_bit = sealed_bit >> 1;
  static constexpr std::size_t limit_mask = dropped_bit - 1;

  // start() past the common case: more room.
  void grow(std::size_t wanted, std::size_t most);
  // The next claimable item, below the limit of the state it read into `seen`.
  Instance* claim(std::size_t& seen) noexcept {
    std::size_t k = next_.load(std::memory_order_relaxed);
    for (;;) {
      // acquire: the owner wrote the items below a limit before storing it.
      seen = state_.load(std::memory_order_acquire);
      if (k >= (seen & limit_mask)) return nullptr;
      // Never past the limit: an index taken beyond it would be lost once the owner adds.
      if (next_.compare_exchange_weak(k, k + 1, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
        return items_[k];
    }
  }

  EngineCore& core_;
  Scheduler& scheduler_;
  RunQueueHooks& hooks_;
  std::vector<Instance*> items_;
  std::size_t added_ = 0;  // owner
  bool offered_ = false;   // owner
  bool ran_out_ = false;   // owner: an add since the last start found it full
  // The claimable count; sealed_bit once the owner adds no more; dropped_bit once a taker
  // found nothing before the seal (see the class comment).
  std::atomic<std::size_t> state_{0};
  std::atomic<std::size_t> next_{0};  // the next item to claim (never past the limit)
  std::atomic<bool> busy_{false};
};

}  // namespace swp::detail
