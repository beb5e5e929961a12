#pragma once
// HandOverBackoff: how long in-place work stays off after a worker took some of it over.

#include <algorithm>

namespace swp::detail {

/// A hand-over of in-place work (data-flow's offered iterations, the clock's offered batches)
/// costs several µs: a heavy fence, the counters' set-up, the owner's wait for it. Tasks long
/// enough to be taken over run no worse the general way, with a worker, and this keeps them
/// there: each hand-over makes the next `backoff` chances go the general way (at least
/// `min_skip`, doubling while hand-overs come in a row, up to `max_skip`), and each run that
/// went whole takes an eighth off, so in-place work comes back when the tasks got short again
/// while a hand-over in more than one in eight keeps them rare. One thread's (the owner's).
class HandOverBackoff {
 public:
  static constexpr unsigned min_skip = 64;
  static constexpr unsigned max_skip = 4096;

  /// Whether this chance may run in place (false: one of the skipped ones, counted).
  bool allows() noexcept {
    if (skip_ == 0) return true;
    --skip_;
    return false;
  }
  /// Whether the next chance is a skipped one (allows() would say false).
  [[nodiscard]] bool skipping() const noexcept { return skip_ != 0; }
  /// What the in-place run did: went whole, or was handed over.
  void ran(bool whole) noexcept {
    if (whole) {
      backoff_ -= backoff_ / 8;
      return;
    }
    backoff_ = std::clamp(2 * backoff_, min_skip, max_skip);
    skip_ = backoff_;
  }
  /// The next min_skip chances go the general way (the in-place run could not start).
  void defer() noexcept { skip_ = min_skip; }
  /// A run starts: no backoff.
  void reset() noexcept { backoff_ = skip_ = 0; }

 private:
  unsigned backoff_ = 0;
  unsigned skip_ = 0;
};

}  // namespace swp::detail
