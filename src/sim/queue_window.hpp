#pragma once
// QueueWindow: how far ahead of a sim stream its work is queued (private to src/sim).

#include <cstddef>
#include <vector>

namespace swp::detail {

/// Bounds the work queued ahead on sim streams. Each queue (a rank's compute stream, a link's
/// transfer stream) holds at most `window` work items that have not ended; whoever feeds it
/// stops there (pause) and is told to go on once they are down to half (resumable).
///
/// This keeps a simulation's memory to a few items per stream instead of every item of its
/// schedule, and leaves the timeline as it is: a sim stream starts an item at the latest of
/// when it was enqueued, when the item before it ended and what it waits for; fed while
/// `window / 2` of its own items are still ahead, a stream gets work that cannot start before
/// those end, so when it was enqueued never decides its start.
///
/// Single-threaded, like the SimScheduler that runs the streams.
class QueueWindow {
 public:
  static constexpr std::size_t window = 8;

  /// A new queue; returns its id (0, 1, ... in order).
  std::size_t add() {
    queued_.push_back(0);
    paused_.push_back(false);
    // Room for every queue at once, so that completed() never allocates.
    if (resumable_.capacity() < queued_.size()) resumable_.reserve(2 * queued_.size());
    return queued_.size() - 1;
  }

  [[nodiscard]] bool full(std::size_t id) const { return queued_[id] >= window; }
  void queued(std::size_t id) { ++queued_[id]; }
  /// Its feeder stopped at the window: `id` becomes resumable when it is down to half.
  void pause(std::size_t id) { paused_[id] = true; }

  /// An item of `id` ended. Called from stream observers: never allocates, never throws.
  void completed(std::size_t id) noexcept {
    if (--queued_[id] <= window / 2 && paused_[id]) {
      paused_[id] = false;
      resumable_.push_back(id);  // within the capacity add() reserved
    }
  }

  [[nodiscard]] bool any_resumable() const noexcept { return !resumable_.empty(); }

  /// The queues that may be fed again, in the order they became so; clears the list.
  void take_resumable(std::vector<std::size_t>& out) {
    out.assign(resumable_.begin(), resumable_.end());
    resumable_.clear();
  }

 private:
  std::vector<std::size_t> queued_;  // per queue: items queued that have not ended
  std::vector<bool> paused_;         // per queue: its feeder waits to be told
  std::vector<std::size_t> resumable_;
};

}  // namespace swp::detail
