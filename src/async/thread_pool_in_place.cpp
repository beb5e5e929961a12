// ThreadPoolScheduler: what a thread does in place, on its own work: the posts a RunHere keeps,
// PostBatch scopes, and what the thread asks about itself (drives_here, runs_no_work_here,
// nothing_next_here).

#include <utility>

#include "swp/async/thread_pool_scheduler.hpp"
#include "thread_pool_context.hpp"

namespace swp {

using detail::current;
using detail::outermost_driver;

namespace {

// Runnables a RunHere runs where it ends before it posts the rest as usual: a runnable that
// keeps re-posting itself must not hold the thread inside the scope's end.
constexpr unsigned run_here_limit = 64;

}  // namespace

bool ThreadPoolScheduler::begin_run_here() noexcept {
  // With workers, kept work would be hidden from threads that could run it sooner.
  if (worker_count_ != 0) return false;
  Context* c = current;
  if (c == nullptr) {
    // Outside any pool's work: a context without a queue (no claim: the scope needs none, and
    // its runnables' successors run as their bypasses). outermost_driver is free whenever
    // `current` is null.
    c = &outermost_driver;
    c->scheduler = this;
    c->queue = nullptr;
    c->lone = nullptr;
    c->watched = nullptr;
    current = c;
  } else if (c->scheduler != this || c->queue == nullptr || c->running != nullptr || c->keeping ||
             c->batch_depth > 0) {
    return false;  // another pool's work, inside a runnable, or already keeping
  }
  c->keeping = true;
  return true;
}

void ThreadPoolScheduler::end_run_here() noexcept {
  Context& c = *current;
  if (c.queue != nullptr) {
    // A drive section's: its runnables post as a driver's do.
    c.keeping = false;
    while (Runnable* r = c.kept.pop()) run_chain(c, r);
    return;
  }
  // Runs what was kept, each with its bypass chain; what a runnable posts otherwise goes to
  // the injector (post), and `keeping` stays set meanwhile so a drive inside a runnable takes
  // the rest (DriverScope).
  unsigned ran = 0;
  Runnable* r = c.kept.pop();
  while (r != nullptr && ran < run_here_limit) {
    c.running = r;
    r->run();
    c.running = nullptr;
    ++ran;
    r = std::exchange(c.bypass, nullptr);
    if (r == nullptr) r = c.kept.pop();
  }
  c.keeping = false;
  current = nullptr;
  // Past the limit: the rest is posted as usual (from outside any pool's work: the injector).
  if (r != nullptr) post(*r);
  while (Runnable* rest = c.kept.pop()) post(*rest);
}

void ThreadPoolScheduler::take_kept(Context& from, Context* to) noexcept {
  // Pushed to the drive's queue in their order, where the drive (or a thief) finds them.
  Context& target = to != nullptr ? *to : from;
  bool moved = false;
  while (Runnable* r = from.kept.pop()) {
    if (target.queue != nullptr) {
      push_local(target, *r);
    } else {
      inject(*r);  // a driver beyond max_drivers
    }
    moved = true;
  }
  if (to == nullptr) from.keeping = false;  // the drive uses this context: posts go as usual
  if (moved) {
    detail::seq_cst_fence();  // announced as posts are (see post)
    wake_helper();
  }
}

void ThreadPoolScheduler::begin_post_batch() noexcept {
  Context* c = current;
  if (c != nullptr && c->scheduler == this && c->queue != nullptr) ++c->batch_depth;
}

void ThreadPoolScheduler::end_post_batch() noexcept {
  Context* c = current;
  if (c == nullptr || c->scheduler != this || c->queue == nullptr || c->batch_depth == 0) return;
  if (--c->batch_depth > 0 || !std::exchange(c->wake_owed, false)) return;
  detail::seq_cst_fence();  // orders the pushes before wake_helper's loads (as in post())
  wake_helper();
}

bool ThreadPoolScheduler::nothing_next_here() const noexcept {
  const Context* c = current;
  // relaxed: only this thread puts work in its own slot (see find_work).
  return c != nullptr && c->scheduler == this && c->bypass == nullptr &&
         (c->queue == nullptr || c->queue->slot.load(std::memory_order_relaxed) == nullptr);
}

bool ThreadPoolScheduler::drives_here() const noexcept {
  const Context* c = current;
  // A driver beyond max_drivers (no queue) posts to the injector, which other drivers serve.
  return c != nullptr && c->scheduler == this && c->queue != nullptr && c->running == nullptr;
}

bool ThreadPoolScheduler::runs_no_work_here() const noexcept { return current == nullptr; }

}  // namespace swp
