#pragma once
// What the translation units of ThreadPoolScheduler share (not installed): a thread's run
// queue and context, and the thread-local that says which context the thread runs in.

#include <atomic>
#include <cstdint>

#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/detail/work_stealing_queue.hpp"
#include "swp/async/thread_pool_scheduler.hpp"

namespace swp {

namespace detail {

// A thread's run queue: the "next" slot and the ring behind it.
struct alignas(64) PoolQueue {
  WorkStealingQueue<Runnable> ring;
  // Only the owning thread stores non-null; the owner and thieves take it by exchange / CAS.
  alignas(64) std::atomic<Runnable*> slot{nullptr};
  // Driver queues: a thread in drive_until owns this one.
  std::atomic<bool> claimed{false};
  // Runnables the owner has run, published after each: a thief that finds it unchanged after
  // waiting a while knows the owner is stuck (blocked in a runnable, descheduled, or gone from
  // drive_until). On a line of its own: the owner writes it at every step, while polling
  // threads read the slot's line on every look (and this one only when they saw lone work).
  alignas(64) std::atomic<std::uint32_t> progress{0};
  // The owner's progress at the last look of a thief that found surplus here and left it (the
  // owner was moving on). Only thieves touch it, on a line of its own.
  alignas(64) std::atomic<std::uint32_t> surplus_seen{0};
};

// What a thread running a ThreadPoolScheduler's work knows about itself.
struct PoolContext {
  ThreadPoolScheduler* scheduler = nullptr;
  PoolQueue* queue = nullptr;   // null: a driver beyond max_drivers (posts go to the injector)
  Runnable* running = nullptr;  // the runnable this thread is inside, if any
  Runnable* bypass = nullptr;   // runs right after `running` (post_next), seen by no other
  std::uint32_t ticks = 0;      // runnables run; every 61st looks at the injector first
  // Left by each look at other threads' queues: one whose work the look left to its owner
  // (the owner was getting through it fast enough, see steal_surplus), and that owner's
  // progress then.
  PoolQueue* lone = nullptr;
  std::uint32_t lone_progress = 0;
  // The lone work seen before this thread's last timed park, to tell a stuck owner.
  PoolQueue* watched = nullptr;
  std::uint32_t watched_progress = 0;
  std::uint32_t rng = 0x9e3779b9;  // victim choice
  // Open PostBatch scopes on this thread, and whether a post inside them is still to be
  // announced (end_post_batch).
  unsigned batch_depth = 0;
  bool wake_owed = false;
  // An open RunHere (see begin_run_here): posts made outside runnables wait in `kept`.
  bool keeping = false;
  IntrusiveFifo<Runnable, &Runnable::next_runnable> kept;
};

// The context of the scheduler whose work this thread runs (innermost, when nested).
// constinit: read on every post, without a check for a dynamic initializer; initial-exec: no
// __tls_get_addr call from the shared library; hidden: not part of libswp's interface.
[[gnu::tls_model("initial-exec"),
  gnu::visibility("hidden")]] extern constinit thread_local PoolContext* current;

// The context of a thread driving a pool outside any other pool's work (the usual driver: a
// pipeline's progress(), once per call): kept across its drive sections, so entering one sets
// only what a section changes. Free whenever `current` is null.
[[gnu::tls_model("initial-exec"),
  gnu::visibility("hidden")]] extern constinit thread_local PoolContext outermost_driver;

// The owner's sign of life in `q` (see PoolQueue::progress). relaxed: only the owner writes it.
inline void bump_progress(PoolQueue& q) noexcept {
  q.progress.store(q.progress.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace detail

// Inline: once per post (a period's releases post every instance).
[[gnu::always_inline]] inline void ThreadPoolScheduler::push_local(Context& c,
                                                                   Runnable& r) noexcept {
  if (!c.queue->ring.push(&r)) [[unlikely]]
    inject(r);  // ring full: overflow to the shared queue
}

}  // namespace swp
