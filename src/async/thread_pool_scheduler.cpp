// ThreadPoolScheduler: its threads, run queues, stealing, parking and driving (what a thread
// does in place on its own work: thread_pool_in_place.cpp).

#include "swp/async/thread_pool_scheduler.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <mutex>
#include <new>
#include <utility>

#include "swp/async/detail/polling.hpp"
#include "thread_pool_context.hpp"

namespace swp {

namespace {

// The driver queue this thread released last (its index among the driver queues), and whose
// it was: a thread that drives again takes the same one back, with the work it left there.
// (initial-exec: read on every drive_until, they must not cost a __tls_get_addr call from the
// shared library.)
[[gnu::tls_model("initial-exec")]] thread_local const ThreadPoolScheduler* last_scheduler = nullptr;
[[gnu::tls_model("initial-exec")]] thread_local unsigned last_driver = 0;

// How long an idle thread leaves another thread the one piece of work that thread runs next:
// the owner normally runs it within nanoseconds, and moving it costs cache misses on both
// sides and makes the owner wait for the thief; an owner that made no progress for this long
// is blocked in a runnable, lost its CPU, or left drive_until.
constexpr std::chrono::microseconds lone_patience{50};
// About what moving a runnable to another thread costs (the cache misses of its state and of
// the queues on both sides; a few hundred ns on one socket, more across sockets or on a
// loaded virtual machine): an idle thread takes work from a thread that would take longer to
// get through it (see steal_surplus). 1 µs kept two threads at one thread's speed (or below)
// on 0.4-0.8 µs tasks; 250 ns moves them and still leaves a 30 ns task's chain on its thread
// (docs/benchmarks.md, twenty-fifth session).
constexpr double move_cost_ns = 250;
// Surplus an idle thread takes even from an owner that is moving on: more than it clears soon.
constexpr std::size_t backlog = 32;
constexpr unsigned deadline_check_every = 64;  // runnables between clock reads while busy

using detail::back_off;
using detail::max_look_interval_ns;
using detail::pause_round;
using detail::pause_round_ns;
using detail::rounds_to_next_look;

inline std::uint32_t next_random(std::uint32_t& state) noexcept {  // xorshift32
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return state;
}

}  // namespace

namespace detail {

// (The attributes again: a definition without them would make them global-dynamic here.)
[[gnu::tls_model("initial-exec"), gnu::visibility("hidden")]] constinit thread_local
    PoolContext* current = nullptr;
[[gnu::tls_model("initial-exec"), gnu::visibility("hidden")]] constinit thread_local
    PoolContext outermost_driver;

}  // namespace detail

using detail::bump_progress;
using detail::current;
using detail::outermost_driver;

// Gives a thread entering drive_until its context: the one it already has when it runs this
// scheduler's work (a worker, or a nested drive_until), else a driver context with a driver
// queue (outermost_driver when the thread runs no pool's work, else one of its own).
class ThreadPoolScheduler::DriverScope {
 public:
  explicit DriverScope(ThreadPoolScheduler& s) : scheduler_(s), outer_(current) {
    // The context of the pool's work this thread runs, unless it is a RunHere's without a
    // queue (below).
    if (outer_ != nullptr && outer_->scheduler == &s &&
        !(outer_->keeping && outer_->queue == nullptr)) {
      // A drive inside a RunHere of this thread's drive section: what the scope kept is
      // what it may wait for (see take_kept).
      if (outer_->keeping) s.take_kept(*outer_);
      return;
    }
    Context& c = outer_ == nullptr ? outermost_driver : *new (&own_) Context;
    if (c.scheduler != &s) {  // new, or its last section drove another pool
      c.scheduler = &s;
      c.rng ^= static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(&c) >> 4);
    }
    // What the last section saw of other queues is stale (they may even be another pool's,
    // gone, whose address this one took). A section leaves nothing running, nothing to bypass
    // and no batch open (each is undone before its runnable or batch scope returns).
    c.lone = nullptr;
    c.watched = nullptr;
    c.queue = s.claim_driver_queue();
    // Inside a RunHere outside any drive (its context has no queue): the drive is a driving
    // thread's, with a queue of its own, and takes what the scope kept (see take_kept).
    if (outer_ != nullptr && outer_->keeping) s.take_kept(*outer_, &c);
    current = &c;
  }
  ~DriverScope() {
    if (current == outer_) return;  // nested: the outer drive_until or worker owns the context
    if (current->queue != nullptr) scheduler_.release_driver_queue(*current->queue);
    current = outer_;
  }
  DriverScope(const DriverScope&) = delete;
  DriverScope& operator=(const DriverScope&) = delete;

  [[nodiscard]] Context& context() noexcept { return *current; }

 private:
  ThreadPoolScheduler& scheduler_;
  Context* outer_;
  // A context of its own, made only when the thread runs another pool's work meanwhile (its
  // outermost_driver may be in use). Trivially destructible: nothing to end.
  union {
    Context own_;
  };
};

unsigned ThreadPoolScheduler::default_workers() noexcept {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 1 ? hw - 1 : 1;
}

ThreadPoolScheduler::ThreadPoolScheduler(unsigned workers, std::chrono::microseconds spin,
                                         ThreadStartHook on_start, std::string lane)
    : worker_count_(workers),
      spin_rounds_(spin.count() <= 0
                       ? 0
                       : static_cast<unsigned>(std::min(
                             1e9, static_cast<double>(spin.count()) * 1000.0 / pause_round_ns()))),
      move_rounds_(std::max(1U, static_cast<unsigned>(move_cost_ns / pause_round_ns()))),
      look_rounds_(std::max(1U, static_cast<unsigned>(max_look_interval_ns / pause_round_ns()))),
      queues_(new Queue[workers + max_drivers]),
      queues_in_use_(workers),
      on_start_(std::move(on_start)),
      lane_(std::move(lane)) {
  threads_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPoolScheduler::~ThreadPoolScheduler() { join_workers(); }

void ThreadPoolScheduler::join_workers() noexcept {
  // seq_cst store, then notify_all's fence: a worker between its registration and its
  // re-check of stop_ either sees the store or is counted and woken (EventCount's protocol).
  stop_.store(true, std::memory_order_seq_cst);
  idle_workers_.notify_all();
  threads_.clear();  // joins
}

void ThreadPoolScheduler::post(Runnable& r) noexcept {
  Context* c = current;
  if (c == nullptr || c->scheduler != this || c->queue == nullptr) {
    // In a RunHere outside any drive: kept from the scope's own posts, run when it ends (see
    // begin_run_here); a runnable's goes to the injector, the next drive's first look.
    if (c != nullptr && c->keeping && c->running == nullptr && c->scheduler == this) {
      c->kept.push(r);
      return;
    }
    inject(r);
    // seq_cst fence: orders the push before wake_helper's loads (see wake_helper).
    detail::seq_cst_fence();
    wake_helper();
    return;
  }
  if (c->keeping && c->running == nullptr) [[unlikely]] {
    c->kept.push(r);  // an open RunHere: run when it ends
    return;
  }
  if (&r == c->running || c->running == nullptr || c->batch_depth > 0) {
    // A runnable re-posting itself (a lane with more steps): to the back of the queue, behind
    // the work it woke, so it cannot keep the thread to itself. A post outside any runnable
    // (a driving section admitting work) continues nothing: the queue keeps its order.
    // In a batch, every post keeps the order, announced when the batch ends.
    push_local(*c, r);
    // Posting is progress: a driver that admits work between runnables is not slow to get to
    // it (see steal_surplus).
    if (c->running == nullptr) bump_progress(*c->queue);
    if (c->batch_depth > 0) {
      c->wake_owed = true;
      return;
    }
    detail::seq_cst_fence();  // as above
    wake_helper();
    return;
  }
  // The newest work takes the slot: it usually continues what the current runnable did.
  // seq_cst: this exchange publishes `r` to thieves, and a thread that is about to park must
  // see it or be seen by wake_helper's seq_cst loads (the exchange orders like a fence there).
  if (Runnable* displaced = c->queue->slot.exchange(&r, std::memory_order_seq_cst)) {
    push_local(*c, *displaced);
    detail::seq_cst_fence();  // orders the ring push likewise
  }
  wake_helper();
}

void ThreadPoolScheduler::post_next(Runnable& r) noexcept {
  Context* c = current;
  // A runnable that a RunHere runs where it ends has no queue, and a bypass like any other.
  if (c != nullptr && c->scheduler == this && (c->queue != nullptr || c->keeping) &&
      c->running != nullptr && c->bypass == nullptr && &r != c->running) {
    // Hidden from thieves only until `running` returns, which its caller promised is now.
    c->bypass = &r;
    return;
  }
  post(r);
}

void ThreadPoolScheduler::inject(Runnable& r) noexcept {
  std::lock_guard lock(inject_lock_);
  injected_.push(r);
  // relaxed: written under the lock; pollers that skip the lock on 0 re-read it seq_cst after
  // the poster's fence (see wake_helper).
  injected_count_.store(injected_count_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
}

Runnable* ThreadPoolScheduler::pop_injected() noexcept {
  // seq_cst: a thread re-checking for work before it parks must see a fenced push.
  if (injected_count_.load(std::memory_order_seq_cst) == 0) return nullptr;
  std::lock_guard lock(inject_lock_);
  Runnable* r = injected_.pop();
  if (r != nullptr)
    injected_count_.store(injected_count_.load(std::memory_order_relaxed) - 1,
                          std::memory_order_relaxed);
  return r;
}

void ThreadPoolScheduler::wake_helper() noexcept {
  // The caller published work, then issued a seq_cst fence (or the slot's seq_cst exchange).
  // A thread that stops polling decrements searching_ (seq_cst) and then looks at every queue
  // (seq_cst loads), and a parking thread registers with its EventCount and then looks: the
  // store-buffering pattern in both cases, so either this sees the poller / the registration
  // or the poller / the parker sees the work. seq_cst loads: they must take part in the total
  // order when the caller's ordering came from the exchange rather than a fence.
  if (searching_.load(std::memory_order_seq_cst) > 0) return;  // a polling thread will see it
  if (idle_workers_.notify_one_after_fence()) return;
  // No worker parked (all busy): a parked driver can run it meanwhile; with zero workers the
  // drivers are the only threads there are.
  idle_drivers_.notify_one_after_fence();
}

void ThreadPoolScheduler::stop_searching() noexcept {
  // seq_cst: a poster that saw this thread polling skipped its wake-up; the look below must
  // see its work (store-buffering with wake_helper's load of searching_).
  if (searching_.fetch_sub(1, std::memory_order_seq_cst) == 1 && has_visible_work())
    wake_helper();
}

bool ThreadPoolScheduler::has_visible_work() const noexcept {
  // seq_cst loads throughout: see wake_helper.
  if (injected_count_.load(std::memory_order_seq_cst) != 0) return true;
  const unsigned n = queues_in_use_.load(std::memory_order_seq_cst);
  for (unsigned i = 0; i < n; ++i) {
    if (!queues_[i].ring.empty() || queues_[i].slot.load(std::memory_order_seq_cst) != nullptr)
      return true;
  }
  return false;
}

Runnable* ThreadPoolScheduler::find_work(Context& c, unsigned paused) noexcept {
  Runnable* r = nullptr;
  if (c.queue != nullptr) {
    // relaxed: only this thread puts work in its own slot; thieves only take it (so it may
    // be gone by the exchange, never put back). Looked at first: see run_chain.
    if (c.queue->slot.load(std::memory_order_relaxed) != nullptr &&
        (r = c.queue->slot.exchange(nullptr, std::memory_order_relaxed)) != nullptr)
      return r;
    if ((r = local_work(c)) != nullptr) return r;
  }
  if ((r = pop_injected()) != nullptr) return r;
  return steal_surplus(c, paused);
}

Runnable* ThreadPoolScheduler::steal_surplus(Context& c, unsigned paused) noexcept {
  c.lone = nullptr;
  // seq_cst: a driver queue claimed (seq_cst) before its owner posted must be looked at by a
  // thread re-checking before it parks.
  const unsigned n = queues_in_use_.load(std::memory_order_seq_cst);
  if (n == 0) return nullptr;
  const unsigned start = next_random(c.rng) % n;
  for (unsigned i = 0; i < n; ++i) {
    Queue& victim = queues_[(start + i) % n];
    if (&victim == c.queue) continue;
    const std::size_t queued = victim.ring.size();
    // seq_cst: as in has_visible_work.
    const bool slot_full = victim.slot.load(std::memory_order_seq_cst) != nullptr;
    const std::size_t waiting = queued + (slot_full ? 1 : 0);
    if (waiting == 0) continue;
    // relaxed: a sign of life; whatever is taken is taken by CAS.
    const std::uint32_t progress = victim.progress.load(std::memory_order_relaxed);
    // Work is worth moving when its owner would take longer to get through it than the move
    // costs: the owner ran `ran` runnables in about the `paused` rounds since the last look at
    // this queue, so it needs about waiting * paused / ran rounds for what waits. An owner
    // inside a long runnable (or blocked, descheduled, gone from drive_until) ran none. An
    // owner that moves faster keeps its work, and its lines: moving a short task costs more
    // than running it (cache misses on both sides). Only a look after a pause can tell.
    const std::uint32_t ran = progress - victim.surplus_seen.load(std::memory_order_relaxed);
    const bool slow =
        paused > 0 &&
        (ran == 0 || static_cast<std::uint64_t>(waiting) * paused >
                         static_cast<std::uint64_t>(move_rounds_) * ran);
    if (slow || queued >= backlog) {
      // The oldest first (parallelism), then the item the owner runs next.
      if (Runnable* r = victim.ring.pop()) return r;
      if (slow && slot_full) {
        Runnable* r = victim.slot.load(std::memory_order_relaxed);  // re-validated by the CAS
        // acquire: pairs with the owner's seq_cst exchange that put it there.
        if (r != nullptr && victim.slot.compare_exchange_strong(
                                r, nullptr, std::memory_order_acquire, std::memory_order_relaxed))
          return r;
      }
      continue;
    }
    victim.surplus_seen.store(progress, std::memory_order_relaxed);
    if (c.lone == nullptr) {  // a thread about to park looks again (see take_stuck)
      c.lone = &victim;
      c.lone_progress = progress;
    }
  }
  return nullptr;
}

Runnable* ThreadPoolScheduler::take_stuck(Context& c) noexcept {
  if (c.lone == nullptr) {
    c.watched = nullptr;
    return nullptr;
  }
  if (c.lone != c.watched || c.lone_progress != c.watched_progress) {
    // New, or its owner moved on since: give it the patience first.
    c.watched = c.lone;
    c.watched_progress = c.lone_progress;
    return nullptr;
  }
  c.watched = nullptr;
  Queue& victim = *c.lone;
  if (Runnable* r = victim.ring.pop()) return r;
  Runnable* r = victim.slot.load(std::memory_order_relaxed);  // re-validated by the CAS
  // acquire: pairs with the owner's seq_cst exchange that put the runnable there, so its state
  // is visible here.
  if (r != nullptr &&
      victim.slot.compare_exchange_strong(r, nullptr, std::memory_order_acquire,
                                          std::memory_order_relaxed))
    return r;
  return nullptr;
}

unsigned ThreadPoolScheduler::run_chain(Context& c, Runnable* r, const std::uint32_t* seen) noexcept {
  unsigned chain = 0;
  while (r != nullptr) {
    Runnable* const outer = std::exchange(c.running, r);
    r->run();  // `r` may run elsewhere, or be gone, from here on
    c.running = outer;
    ++c.ticks;
    ++chain;
    if (c.queue == nullptr) break;
    // relaxed: only a sign of life for thieves (see PoolQueue::progress).
    bump_progress(*c.queue);
    // The bypass first (it continues what `r` did), then the slot. relaxed: as in find_work.
    // The slot is looked at before it is taken: an exchange on an empty slot would still
    // write its line, which polling threads read.
    r = std::exchange(c.bypass, nullptr);
    if (r == nullptr && c.queue->slot.load(std::memory_order_relaxed) != nullptr)
      r = c.queue->slot.exchange(nullptr, std::memory_order_relaxed);
    // A driver that was notified since it last looked at its condition looks now: its caller
    // waits for that condition (a pipeline's oldest iteration completed elsewhere: retiring it
    // admits the next), and a chain of long runnables would keep it waiting for all of them.
    // relaxed: a stale value only delays the look (the drive loop loads it acquire).
    const bool notified = seen != nullptr && notified_.load(std::memory_order_relaxed) != *seen;
    if (chain >= max_chain || notified) {
      // Long enough, or the driver looks: what was handed over queues behind older work. It
      // stays visible: it was in the bypass or the slot, now it is in the ring, and this thread
      // takes it when it comes back. (Kept first, in the slot, after a notification, the 1 µs
      // chain was slower: 0.72 of the serial loop against 0.61; docs/async.md, Drivers.)
      if (r != nullptr) push_local(c, *r);
      break;
    }
    // Nothing handed over: this thread's own queue, without going back to the loop that
    // called (a driving thread looks at its condition once per chain, not once per runnable;
    // a period's instances queued together run as one chain). Not once the scheduler is
    // being destroyed: queued work is dropped then (relaxed: as in worker_loop).
    if (r == nullptr && !stop_.load(std::memory_order_relaxed)) r = local_work(c);
  }
  return chain;
}

Runnable* ThreadPoolScheduler::local_work(Context& c) noexcept {
  // Fairness for foreign posts: a thread with endless local work still serves them.
  if (c.ticks % 61 == 60)
    if (Runnable* r = pop_injected()) return r;
  return c.queue->ring.pop();
}

void ThreadPoolScheduler::worker_loop(unsigned index) noexcept {
  begin_thread(lane_.empty() ? ThreadStart{ThreadStart::Role::worker, {}, index}
                             : ThreadStart{ThreadStart::Role::lane, lane_, 0},
               on_start_);
  Context c;
  c.scheduler = this;
  c.queue = &queues_[index];
  c.rng += index * 0x632be5abU;
  current = &c;
  // relaxed: a late look at stop_ only delays the exit by one runnable; worker_idle checks it
  // with the ordering that matters.
  while (!stop_.load(std::memory_order_relaxed)) {
    Runnable* r = find_work(c);
    if (r == nullptr && (r = worker_idle(c)) == nullptr) break;
    run_chain(c, r);
  }
  current = nullptr;
}

Runnable* ThreadPoolScheduler::worker_idle(Context& c) noexcept {
  // Poll only while few others do: each poller reads every queue, and on two cores a worker
  // polling next to a polling caller only competes with it for the same small tasks.
  // relaxed: only a heuristic.
  bool searching = 2 * searching_.load(std::memory_order_relaxed) < static_cast<int>(worker_count_);
  if (searching) searching_.fetch_add(1, std::memory_order_seq_cst);
  // Back from a patience that ran out: counted as polling until registered (below).
  bool from_patience = false;
  for (;;) {
    if (searching) {
      for (unsigned looks = 0, paused = 0, last = 0;; ++looks) {
        if (stop_.load(std::memory_order_relaxed)) {  // relaxed: re-checked before parking
          stop_searching();
          return nullptr;
        }
        if (Runnable* r = find_work(c, last)) {
          stop_searching();
          return r;
        }
        // Work seen and left to an owner that is moving on: the pipeline is busy, and a parked
        // thread would cost every post a wake-up. Poll on (at the slowest pace, which yields
        // the core: see back_off) instead.
        if (c.lone != nullptr) paused = 0;
        if (paused >= spin_rounds_) break;
        last = back_off(looks, look_rounds_);
        paused += last;
      }
      // seq_cst: store-buffering with wake_helper's load of searching_ (the look below).
      searching_.fetch_sub(1, std::memory_order_seq_cst);
      searching = false;
    }
    const auto key = idle_workers_.prepare_wait();
    if (from_patience) {
      // Registered: a post from here on wakes this thread, so it stops counting as polling
      // (the look below is the one a thread that stops polling owes).
      searching_.fetch_sub(1, std::memory_order_seq_cst);
    }
    // seq_cst: the destructor stores stop_ and then notifies (EventCount's protocol).
    if (stop_.load(std::memory_order_seq_cst)) {
      idle_workers_.cancel_wait();
      return nullptr;
    }
    Runnable* r = find_work(c);
    if (r == nullptr) r = take_stuck(c);
    if (r != nullptr) {
      idle_workers_.cancel_wait();
      // Posters that counted on this registration may have skipped their wake-ups.
      searching_.fetch_add(1, std::memory_order_seq_cst);
      stop_searching();
      return r;
    }
    from_patience = false;
    if (c.watched != nullptr) {
      // Another thread's next work waits for its owner: look again after the patience, so an
      // owner blocked in a runnable cannot hide it, and without polling meanwhile.
      const bool woken = idle_workers_.commit_wait_until(key, Clock::now() + lone_patience);
      // Counted as polling before it looks again: never seen as neither meanwhile. A patience
      // that ran out: one look (below the loop's registration), not another round of polling.
      searching_.fetch_add(1, std::memory_order_seq_cst);
      if (!woken) {
        from_patience = true;
        continue;
      }
    } else {
      idle_workers_.commit_wait(key);
      // Woken for work: poll (and count as polling, so further posts need not wake another).
      searching_.fetch_add(1, std::memory_order_seq_cst);
    }
    searching = true;
  }
}

void ThreadPoolScheduler::wake_drivers() noexcept {
  // relaxed: ordered after the condition's store by notify()'s fence. A load and a store, not
  // a locked increment (notify() follows every iteration that completes off the waiting
  // thread): concurrent notifiers may store the same value, which still differs from what a
  // driver saw before them.
  notified_.store(notified_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  idle_drivers_.notify_all_after_fence();
}

ThreadPoolScheduler::Queue* ThreadPoolScheduler::claim_driver_queue() noexcept {
  const unsigned first = worker_count_;
  // The driver queue this thread left last, if it was one of ours: kept as an index, never as
  // a pointer (a gone scheduler's queue pointer may fall into this one's array by chance,
  // between two of its queues; dereferenced, it once corrupted queues_in_use_). A stale
  // index of a gone scheduler at the same address is only a hint: any index is a queue here.
  const unsigned hint = last_scheduler == this ? last_driver : 0;
  static_assert(std::has_single_bit(max_drivers));  // the modulo below is a mask
  for (unsigned k = 0; k < max_drivers; ++k) {
    const unsigned i = first + (hint + k) % max_drivers;
    Queue& q = queues_[i];
    // acquire: pairs with the release in release_driver_queue, so this thread's pushes come
    // after the previous owner's (the ring has one producer at a time).
    if (q.claimed.load(std::memory_order_relaxed) ||
        q.claimed.exchange(true, std::memory_order_acquire))
      continue;
    unsigned in_use = queues_in_use_.load(std::memory_order_relaxed);
    // seq_cst: see steal_surplus.
    while (in_use < i + 1 &&
           !queues_in_use_.compare_exchange_weak(in_use, i + 1, std::memory_order_seq_cst,
                                                 std::memory_order_relaxed)) {
    }
    return &q;
  }
  return nullptr;
}

void ThreadPoolScheduler::release_driver_queue(Queue& q) noexcept {
  // What this thread's runnables left stays in its queue, slot included: the thread usually
  // drives again within microseconds (a pipeline's next progress()) and takes the queue back.
  // Meanwhile it is work like any other: surplus is stolen at once, a last item (the slot, or
  // a lone ring item) once this queue made no progress for the patience. No wake-up here:
  // every item was announced when it was posted (post's wake_helper), and a thread that saw
  // it as lone work looks again after the patience.
  last_scheduler = this;
  last_driver = static_cast<unsigned>(&q - &queues_[worker_count_]);
  // release: the next owner's pushes come after this thread's (see claim_driver_queue).
  q.claimed.store(false, std::memory_order_release);
}

void ThreadPoolScheduler::drive_section(detail::FunctionRef<void()> section) {
  DriverScope scope(*this);
  section();
}

bool ThreadPoolScheduler::drive_until(const std::function<bool()>& done,
                                      Clock::time_point deadline) {
  DriverScope scope(*this);
  Context& c = scope.context();
  const bool timed = deadline != Clock::time_point::max();
  bool searching = false;
  bool look_again = false;  // back from a patience timeout: look, but do not poll again first
  // Stops counting as polling before leaving, handing on visible work (see stop_searching).
  auto leave = [&](bool result) {
    if (searching) stop_searching();
    return result;
  };
  unsigned runs = 0;
  // The notifications before the last look at `done` (see run_chain), taken by every look
  // that may be followed by a chain. acquire: pairs with the fence before a notifier's store,
  // so a condition made true before it is seen by done().
  std::uint32_t seen = 0;
  const auto look = [&] {
    seen = notified_.load(std::memory_order_acquire);
    return done();
  };
  for (;;) {
    if (look()) return leave(true);
    if (Runnable* r = find_work(c)) {
      if (searching) {
        stop_searching();
        searching = false;
      }
      look_again = false;
      runs += run_chain(c, r, &seen);
      // Busy all along: look at the clock now and then, or endless work would keep this
      // thread past its deadline.
      if (timed && runs >= deadline_check_every) {
        runs = 0;
        if (Clock::now() >= deadline) return leave(done());
      }
      continue;
    }
    if (deadline == Clock::time_point::min()) return leave(done());  // runnable work only

    // Idle: poll for work and for `done`, then park. The one clock reading of the episode
    // bounds the polling by the deadline.
    unsigned rounds = look_again ? 0 : spin_rounds_;
    if (timed) {
      const auto left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) return leave(done());
      const double ns = std::chrono::duration<double, std::nano>(left).count();
      rounds = static_cast<unsigned>(std::min<double>(rounds, ns / pause_round_ns()));
    }
    look_again = false;
    if (!searching) {
      searching_.fetch_add(1, std::memory_order_seq_cst);
      searching = true;
    }
    Runnable* found = nullptr;
    bool ready = false;
    // `done` every round (the caller's own condition: one line, written once when it holds),
    // other threads' queues with back-off (see max_look_interval_ns).
    for (unsigned i = 0, looks = 0, last_look = 0, next_look = 1; i < rounds; ++i) {
      pause_round();
      if ((ready = look())) break;
      if (i + 1 == next_look) {
        if ((found = find_work(c, next_look - last_look)) != nullptr) break;
        last_look = next_look;
        next_look += rounds_to_next_look(++looks, look_rounds_);
      }
    }
    if (ready) return leave(true);
    if (found != nullptr) {
      stop_searching();
      searching = false;
      run_chain(c, found, &seen);
      continue;
    }
    // seq_cst: store-buffering with wake_helper (as in worker_idle).
    searching_.fetch_sub(1, std::memory_order_seq_cst);
    searching = false;
    const auto key = idle_drivers_.prepare_wait();
    if (look()) {
      idle_drivers_.cancel_wait();
      return true;
    }
    found = find_work(c);
    if (found == nullptr) found = take_stuck(c);
    if (found != nullptr) {  // as in worker_idle
      idle_drivers_.cancel_wait();
      searching_.fetch_add(1, std::memory_order_seq_cst);
      stop_searching();
      run_chain(c, found, &seen);
      continue;
    }
    // Another thread's next work waits for its owner: look again after the patience (as in
    // worker_idle), unless the deadline comes first.
    auto until = deadline;
    bool patience = false;
    if (c.watched != nullptr) {
      const auto at = Clock::now() + lone_patience;
      if (at < deadline) {
        until = at;
        patience = true;
      }
    }
    if (!idle_drivers_.commit_wait_until(key, until)) {
      if (patience) {
        look_again = true;
        continue;
      }
      // Timed out. A poster may have counted on this thread just before (its wake-up was
      // consumed by leaving): hand on what is visible, as a thread that stops polling does.
      if (has_visible_work()) wake_helper();
      return done();
    }
    // Woken by notify() or for work: count as polling until this thread looked (as a worker).
    searching_.fetch_add(1, std::memory_order_seq_cst);
    searching = true;
  }
}

}  // namespace swp
