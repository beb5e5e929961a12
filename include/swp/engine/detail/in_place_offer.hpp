#pragma once
// InPlaceOffer: instances the driving thread runs in place, one after the other, with workers,
// while another thread may take over the part it has not reached (data-flow: an iteration,
// IterationOffer; the clock: a period's batch, ClockRelease).

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "swp/async/detail/asymmetric_fence.hpp"
#include "swp/async/scheduler.hpp"

namespace swp::detail {

/// With one thread the data-flow engine runs an admitted iteration whole in place, its tasks in
/// serial order and without join counters (EngineCore::run_iteration_here). With workers the
/// same would break a promise: an instance that is ready must not wait behind one that the
/// driving thread is running (two tasks of an iteration that wait for each other would hang,
/// tests/engine/test_pipeline_parallelism.cpp). So the driving thread offers the instances
/// (Scheduler::offer: a thief takes it only from a thread that stopped making progress, which
/// also keeps tasks long enough to be worth moving on two threads) and runs them; a thread that
/// takes the offer takes over the rest. The clock's uncounted periods do the same with the
/// batches of instances a period releases (ClockRelease::run_batch).
///
/// Who has which instance, without a read-modify-write on the owner's path: before each serial
/// position the owner stores it and looks at `taken_` (a light fence between); the taker stores
/// `taken_` and reads the position (a heavy fence between: the store-buffering pattern, see
/// asymmetric_fence.hpp). The taker thus reads a position q at which the owner either is (its
/// instance not started, or running), or has finished it and is about to look again; from
/// then on the owner starts nothing after q. One compare-and-swap on `decision_` settles who
/// hands the rest over to the general path (with counters): the owner (an unusual instance,
/// as with one thread), or the taker (take_over(q)), which sets the counters as if q were
/// unfinished, releases what comes after q, and then publishes q. The owner then finishes q the
/// general way, or releases it if it had not started it.
///
/// Threads: the owner (the thread in DataFlowRelease::advance or ClockRelease::advance) offers,
/// looks, withdraws; the thread that runs the offer is the taker. The offer is the owner's
/// again (free to be offered anew) once withdrawn untouched, or once the taker published its
/// decision or its defeat (the taker's last touch of it).
class InPlaceOffer : public Runnable {
 public:
  InPlaceOffer() = default;
  InPlaceOffer(const InPlaceOffer&) = delete;
  InPlaceOffer& operator=(const InPlaceOffer&) = delete;

  /// Owner: offers the instances it is about to run in place (false: not offered, see
  /// Scheduler::offer; the owner runs them the general way). What the derived offer says they
  /// are is set before.
  bool offer(Scheduler& scheduler) noexcept {
    // relaxed: published by the offer (the scheduler's seq_cst exchange) to whoever takes it.
    position_.store(0, std::memory_order_relaxed);
    taken_.store(false, std::memory_order_relaxed);
    decision_.store(undecided, std::memory_order_relaxed);
    return scheduler.offer(*this);
  }
  /// Owner, before serial position `k` (k = the number of tasks: after the last): true when a
  /// thread took the offer; the owner then starts nothing more (see taken_at).
  [[nodiscard]] bool taken_before(std::size_t k) noexcept {
    // release: the instances before k, finished here, are the taker's to read once it reads k.
    position_.store(k, std::memory_order_release);
    light_fence();
    return taken_.load(std::memory_order_relaxed);
  }
  /// Owner, once taken_before returned true, or once it lost the claim below: waits until the
  /// taker has set the counters, and returns the position q it took over at.
  std::size_t taken_at() const noexcept;
  /// Owner: claims the hand-over of the iteration for itself, at the position it is at (an
  /// unusual instance there). False: the taker has it (see taken_at).
  bool claim_for_owner() noexcept {
    std::uint64_t expected = undecided;
    return decision_.compare_exchange_strong(expected, owner, std::memory_order_acq_rel,
                                             std::memory_order_acquire);
  }
  /// Owner, at the end: takes the offer back. A thread that took it meanwhile is waited for
  /// until it no longer touches the offer (its decision or its defeat published).
  void withdraw(Scheduler& scheduler) noexcept;

  /// The taker: see the class comment.
  void run() noexcept final;

 protected:
  ~InPlaceOffer() = default;
  // The taker, having won the decision at position q: hands the rest to the general path
  // (counters as if q were unfinished; what comes after q released). The owner waits for the
  // decision before it returns, so the pipeline stays while this runs.
  virtual void take_over(std::size_t q) noexcept = 0;

 private:
  // decision_: the state in the low two bits, taker_gone, and the taker's position above them.
  static constexpr std::uint64_t undecided = 0;
  static constexpr std::uint64_t owner = 1;   // the owner hands over (a taker leaves)
  static constexpr std::uint64_t taking = 2;  // the taker sets the counters
  static constexpr std::uint64_t ready = 3;   // ... and has set them, from its position
  static constexpr std::uint64_t state_mask = 3;
  static constexpr std::uint64_t taker_gone = 4;  // with `owner`: a defeated taker left
  static constexpr int position_shift = 3;

  std::atomic<std::size_t> position_{0};
  std::atomic<bool> taken_{false};
  std::atomic<std::uint64_t> decision_{undecided};
};

}  // namespace swp::detail
