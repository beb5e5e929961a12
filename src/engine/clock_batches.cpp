// ClockRelease's uncounted periods with workers: each batch a period releases runs in place on
// the thread that drives the pool, offered (InPlaceOffer), and a worker that takes the offer
// takes the rest over with exact counters (EngineCore::count_afresh).
//
// Why it is sound. Uncounted, every instance a batch holds is ready when the owner reaches it,
// as with one thread: its producers were released before it (checked per plan, see
// ClockRelease::period_ordered_) and ran to their end on this thread (a batch runs whole, or
// the periods count from its hand-over on). A taker reads the owner's position q (see
// InPlaceOffer): everything released before the batch's instance at q finished, the one at q
// is the owner's (running, or finished and about to look), nothing after it started. Its
// recount holds the one at q unfinished and its successors waiting for it, and counts nothing
// of the iterations' completion; the owner then gives what falls to it: the count-downs of the
// one at q, which finished uncounted (its completion among them), or its release, if it had not
// started it. An instance's completion is counted at the owner's next look, once it is known
// who counts it.

#include <cassert>

#include "swp/engine/detail/clock_release.hpp"
#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

bool ClockRelease::batches_here() noexcept {
  // On a thread outside the pool's runnables (driving it, or not even that: see
  // EngineCore::retire_next), no device work, and the batches watched.
  const RunQueueHooks& run_queue = core_.run_queue();
  const bool here = !core_.device_used_.load(std::memory_order_relaxed) &&
                    (run_queue.runs_no_work_here() || run_queue.drives_here()) &&
                    core_.watch(batch_offer_);
  if (uncounted_) {
    if (here) return true;
    // Not the driving thread (next() on a worker, say), or device work: this call counts, and
    // the ones after it until uncounted periods may come back. Everything released so far
    // finished (uncounted).
    count_again(nullptr);
    return false;
  }
  if (!here) return false;
  if (!reentry_.allows()) return false;
  if (!quiescent()) {
    reentry_.defer();
    return false;
  }
  uncounted_ = true;
  return true;
}

bool ClockRelease::quiescent() const noexcept {
  const EngineCore& c = core_;
  if (share_.busy() || c.attention_.load(std::memory_order_acquire) != 0) return false;
  // Every instance released finished, and every counter of one not released yet holds what a
  // recount would give it: the count-downs of the finished ones all landed (a finishing
  // instance stores its state before it counts down), so none of them can come after a later
  // recount.
  for (std::int64_t iter = c.oldest_; iter <= c.next_admit_; ++iter) {
    const bool admitted = iter < c.next_admit_;
    const std::size_t entry = c.sync_ring_(iter);
    const IterationSync& sync = c.sync_[entry];
    for (const auto& held : sync.instances) {
      const Instance& in = *held;
      if (admitted && admit_period_[entry] + c.graph_.stage(in.task) < next_period_) {
        if (in.state_in(iter) != InstanceState::finished) return false;
        continue;
      }
      if (in.pending.load(std::memory_order_acquire) != c.afresh_count(in, iter, admitted, nullptr))
        return false;
    }
  }
  return true;
}

void ClockRelease::run_batch() noexcept {
  const std::size_t n = batch_size_;
  if (n == 0) return;
  if (n == 1) return run_alone();
  std::size_t counted_from = n;  // released the general way from here on, by this thread
  if (!batch_offer_.begin()) {
    count_again(nullptr);  // nothing ran: each is released with its counter
    counted_from = 0;
  } else {
    bool taken = false;
    taker_has_rest_ = false;  // set by a hand-over, after which the loop ends
    for (std::size_t k = 0; k < n; ++k) {
      if (!go_on_batch(k)) [[unlikely]] {
        taken = true;
        break;
      }
      Instance& in = *batch_[k];
      const auto hand_over = [this, k](bool started) { hand_over_batch(k, started); };
      const EngineCore::Uncounted ran = core_.run_uncounted(in, hand_over);
      // Its completion is counted at the next look (go_on_batch).
      if (ran == EngineCore::Uncounted::ran) [[likely]]
        continue;
      const bool started = ran == EngineCore::Uncounted::handed_over;
      if (taker_has_rest_) {
        if (!started) release_ready(in);  // the taker released the rest
      } else {
        counted_from = started ? k + 1 : k;
      }
      break;
    }
    if (uncounted_ && !taken) go_on_batch(n);
    // One sign of life per batch, not per instance: a worker then leaves the batches to an
    // owner that gets through them fast (empty tasks), and takes them over from one whose
    // instances take microseconds, where two threads run the periods faster counted.
    batch_offer_.ran_one();
  }
  for (std::size_t k = counted_from; k < n; ++k) release_counted(*batch_[k]);
  batch_size_ = 0;
  reentry_.ran(uncounted_);
}

void ClockRelease::run_alone() noexcept {
  // Nothing behind it to hold back: not offered, it runs as with one thread.
  batch_size_ = 0;
  Instance& in = *batch_[0];
  const auto hand_over = [this, &in](bool started) { count_again(started ? &in : nullptr); };
  switch (core_.run_uncounted(in, hand_over)) {
    case EngineCore::Uncounted::ran:
      count_sink(in);
      break;
    case EngineCore::Uncounted::handed_over:
      break;  // started: it finishes the general way
    case EngineCore::Uncounted::not_started:
      release_counted(in);
      break;
  }
  reentry_.ran(uncounted_);
}

bool ClockRelease::go_on_batch(std::size_t k) noexcept {
  // After the last one, the batch is over for takers (InPlaceOffer::taken_at_end).
  if (k < batch_size_ ? !batch_offer_.taken_before(k) : !batch_offer_.taken_at_end()) {
    if (k > 0) count_sink(*batch_[k - 1]);
    return true;
  }
  const std::size_t q = batch_offer_.taken_at();
  uncounted_ = false;
  if (q == k) {
    // The taker found the one before finished, and left this one, not started, to this thread.
    if (k > 0) count_sink(*batch_[k - 1]);
    release_ready(*batch_[k]);
  } else {
    // The one before finished here uncounted, and the recount held it unfinished: its
    // count-downs, its completion among them.
    core_.count_down_finished(*batch_[q]);
  }
  return false;
}

void ClockRelease::count_sink(Instance& in) noexcept {
  // Only the sinks count (see TaskInfo::counts_completion; no observer: it would have handed
  // over). Atomically: once a taker has the rest, its instances may finish sinks of the same
  // iteration meanwhile.
  if (!in.info->counts_completion) return;
  IterationSync& sync = *in.sync;
  if (core_.completion_count_ == 1 || sync.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1)
    core_.complete_here(sync);
}

void ClockRelease::hand_over_batch(std::size_t k, bool started) noexcept {
  if (batch_offer_.claim_for_owner()) {
    // This thread's: recounted, the rest of the batch released by run_batch.
    count_again(started ? batch_[k] : nullptr);
    return;
  }
  // The taker has the rest, from k (this thread looked before it started it).
  batch_offer_.taken_at();
  uncounted_ = false;
  taker_has_rest_ = true;
}

void ClockRelease::take_over_batch(std::size_t q) noexcept {
  assert(q < batch_size_);  // a taker that found the batch over declined
  core_.count_afresh(batch_[q]);
  // Released by their periods: each gives its start token now, through its lane's claim.
  for (std::size_t k = q + 1; k < batch_size_; ++k) release_counted(*batch_[k]);
}

void ClockRelease::release_ready(Instance& in) noexcept {
  // Every producer finished (uncounted: they ran before it): it waits for its token only.
  in.pending.store(1, std::memory_order_relaxed);
  release_counted(in);
}

void ClockRelease::release_counted(Instance& in) noexcept {
  if (core_.submit(in)) start_under_claim(in);
}

bool ClockRelease::admits_in_place() const noexcept {
  return uncounted_ && batch_offer_.watched() &&
         !core_.device_used_.load(std::memory_order_relaxed);
}

void ClockRelease::unwatch() noexcept { batch_offer_.unwatch(); }

}  // namespace swp::detail
