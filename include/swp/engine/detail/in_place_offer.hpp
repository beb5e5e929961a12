#pragma once
// InPlaceOffer: instances the driving thread runs in place, one after the other, with workers,
// while another thread may take over the part it has not reached (data-flow: an iteration,
// IterationOffer; the clock: a period's batch, ClockRelease).

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "swp/async/detail/asymmetric_fence.hpp"
#include "swp/async/detail/run_queue_hooks.hpp"
#include "swp/async/scheduler.hpp"

namespace swp::detail {

/// With one thread the data-flow engine runs an admitted iteration whole in place, its tasks in
/// serial order and without join counters (EngineCore::run_iteration_here). With workers the
/// same would break a promise: an instance that is ready must not wait behind one that the
/// driving thread is running (two tasks of an iteration that wait for each other would hang,
/// tests/engine/test_pipeline_parallelism.cpp). So the offer is watched by the scheduler's
/// idle threads (RunQueueHooks::watch: a thread takes it only from an owner that stopped making
/// progress, or is slow to get through its instances, which keeps tasks long enough to be
/// worth moving on two threads) while the owner runs its runs (each an iteration, or a batch
/// of a period's releases); a thread that takes it takes over the rest of the run the owner
/// is inside. The watch lasts from the first run to the engine's end (InPlaceOffer::unwatch):
/// a run costs the owner a store and a compiler barrier per instance, nothing more.
///
/// Who has which instance, without a read-modify-write on the owner's path: before each serial
/// position the owner stores it and looks at `taken_` (a light fence between); the taker stores
/// `taken_` and reads the position (a heavy fence between: the store-buffering pattern, see
/// asymmetric_fence.hpp). The taker thus reads a position q at which the owner either is (its
/// instance not started, or running), or has finished it and is about to look again; from
/// then on the owner starts nothing after q. Between runs the position is `idle` (stored by
/// the look after the last instance): a taker that reads it declines, and the owner, at its
/// next look, offers itself again. One compare-and-swap on `decision_` settles who hands the
/// rest of a run over to the general path (with counters): the owner (an unusual instance, as
/// with one thread), or the taker (take_over(q)), which sets the counters as if q were
/// unfinished, releases what comes after q, and then publishes q. The owner then finishes q the
/// general way, or releases it if it had not started it.
///
/// Threads: the owner (the thread in DataFlowRelease::advance or ClockRelease::advance; one at a
/// time) watches, runs, looks, unwatches; the thread that runs the offer is the taker. After a
/// take (or the owner's own hand-over) the offer is re-armed at the owner's next run, once the
/// taker no longer touches it (its decision or its defeat published).
class InPlaceOffer : public Runnable {
 public:
  InPlaceOffer() = default;
  InPlaceOffer(const InPlaceOffer&) = delete;
  InPlaceOffer& operator=(const InPlaceOffer&) = delete;

  /// Owner: has the scheduler (its run-queue hooks) watch this offer, unless it does already.
  /// False: it cannot (no workers, plain hooks, every watch in use, no heavy fences here): the
  /// runs go the general way.
  bool watch(RunQueueHooks& hooks) noexcept;
  /// Owner, between runs: ends the watch (waits for a taker to leave). Before the offer goes,
  /// and when the engine's run ends (a watch is one of few).
  void unwatch() noexcept;
  [[nodiscard]] bool watched() const noexcept { return life_ != nullptr; }

  /// Owner, before a run (what the derived offer says it is set before): false when not
  /// watched (the run goes the general way). Re-arms the offer after a take.
  bool begin() noexcept {
    if (life_ == nullptr) return false;
    if (!armed_) [[unlikely]]
      rearm();
    // Inside a run (see RunQueueHooks::watch).
    life_->store(life_->load(std::memory_order_relaxed) | RunQueueHooks::watch_inside,
                 std::memory_order_relaxed);
    return true;
  }
  /// Owner, before serial position `k` of the run: true when a thread took the offer; the
  /// owner then starts nothing more (see taken_at).
  [[nodiscard]] bool taken_before(std::size_t k) noexcept { return look(k); }
  /// Owner, after the run's last instance: true when a thread took the offer before it looked
  /// (it read the last position; see taken_at). From here on the run is over for takers.
  [[nodiscard]] bool taken_at_end() noexcept {
    if (look(idle)) [[unlikely]]
      return true;
    // Between runs.
    life_->store(life_->load(std::memory_order_relaxed) & ~RunQueueHooks::watch_inside,
                 std::memory_order_relaxed);
    return false;
  }
  /// Owner, after each instance (or batch) that ran here: its sign of life (RunQueueHooks::watch).
  void ran_one() noexcept {
    life_->store(life_->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  /// Owner, once a look returned true, or once it lost the claim below: the position q the
  /// taker took over at (its counters are set).
  std::size_t taken_at() noexcept;
  /// Owner: claims the hand-over of the run for itself, at the position it is at (an unusual
  /// instance there). False: the taker has it (see taken_at).
  bool claim_for_owner() noexcept;

  /// The taker: see the class comment.
  void run() noexcept final;

 protected:
  ~InPlaceOffer() = default;
  // The taker, having won the decision at position q: hands the rest to the general path
  // (counters as if q were unfinished; what comes after q released). The owner waits for the
  // decision before it goes on, so the pipeline stays while this runs.
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
  // The position between runs (a taker that reads it declines).
  static constexpr std::size_t idle = std::size_t{1} << 60;

  bool look(std::size_t k) noexcept {
    // release: the instances before k, finished here, are the taker's to read once it reads k.
    position_.store(k, std::memory_order_release);
    light_fence();
    if (!taken_.load(std::memory_order_relaxed)) [[likely]]
      return false;
    return taken_now(k);
  }
  // A look saw taken_: waits for the taker's decision; a decline re-arms the offer and looks
  // again (false), a take stays for taken_at (true).
  bool taken_now(std::size_t k) noexcept;
  // Offers it again (see begin): resets what a take changed, once no taker touches it.
  void rearm() noexcept;
  // rearm's (and unwatch's) wait until no taker touches the offer.
  void rearm_wait() noexcept;

  RunQueueHooks* hooks_ = nullptr;  // the hooks that watch it
  std::atomic<std::uint32_t>* life_ = nullptr;  // the watch's sign of life; null: not watched
  bool armed_ = false;                          // owner: offered, fields fresh
  bool took_back_ = false;  // owner: after its claim, it took the offer back (see rearm_wait)
  // The owner's position: the taker's to read. alignas: the owner writes it at every step.
  alignas(64) std::atomic<std::size_t> position_{idle};
  std::atomic<bool> taken_{false};
  std::atomic<std::uint64_t> decision_{undecided};
};

}  // namespace swp::detail
