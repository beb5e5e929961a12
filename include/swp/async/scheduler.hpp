#pragma once
// Scheduler: where lanes run. Implementations: ThreadPoolScheduler (host threads) and
// SimScheduler (one thread, virtual time).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>

#include "swp/async/detail/fence.hpp"
#include "swp/async/detail/function_ref.hpp"
#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/detail/spin_lock.hpp"

namespace swp {

/// Intrusive unit of work a Scheduler runs; a Lane is one. Posting never allocates.
class Runnable {
 public:
  /// Does the work. Must not throw: errors travel in futures, not out of the scheduler.
  virtual void run() noexcept = 0;

  Runnable* next_runnable = nullptr;  ///< queue link, owned by the scheduler while queued

 protected:
  ~Runnable() = default;
};

using Clock = std::chrono::steady_clock;

/// Runs Runnables. Threads that wait for a result (a pipeline's `progress()`) call
/// `drive_until`, which lets a scheduler use the waiting thread for work instead of parking it.
class Scheduler {
 public:
  virtual ~Scheduler() = default;

  /// Runs `r` soon. Any thread. A runnable is posted again only after it started running.
  virtual void post(Runnable& r) noexcept = 0;

  /// post(r) from a runnable that is about to return: the scheduler may run `r` right after
  /// it on the same thread, without making it visible to other threads meanwhile (a bypass:
  /// no queue, no wake-up). Call it only at the very end of a runnable's work: nothing may
  /// block between this call and the return, or `r` waits for it. The default posts.
  virtual void post_next(Runnable& r) noexcept { post(r); }

  /// Helps run work on the calling thread until `done()` holds or `deadline` passes; returns
  /// `done()`. `done` is evaluated on the calling thread; whoever makes it true must do so with
  /// an atomic store (release at least) and then call `notify()`, whose fence orders it. A
  /// SimScheduler returns false at once when nothing can make progress anymore.
  virtual bool drive_until(const std::function<bool()>& done, Clock::time_point deadline) = 0;

  /// Runs `section` on the calling thread as one driving stretch: every drive_until inside it
  /// and every post from it (outside a runnable too) uses one run queue of the calling thread,
  /// claimed once, so work posted there (a pipeline admitting an iteration between two waits)
  /// goes to that queue rather than to a shared one, and nested drive_until calls claim
  /// nothing. Errors: whatever `section` throws, after the stretch ended. The default just
  /// calls it.
  ///
  /// Example: `scheduler.drive_section([&] { admit(); scheduler.drive_until(done, t); });`
  virtual void drive_section(detail::FunctionRef<void()> section) { section(); }

  /// Called from a runnable running on this scheduler: true when nothing was handed to the
  /// calling thread to run right after it (no post_next bypass, no newly posted work that
  /// continues it), so the runnable may go on with more of its own work instead of posting
  /// itself again without keeping anything waiting (a Lane takes a few steps in a row then).
  /// The default says false.
  [[nodiscard]] virtual bool nothing_next_here() const noexcept { return false; }

  /// True when nothing runs this scheduler's work but the threads that drive it (drive_until,
  /// drive_section): a pool without workers, virtual time. A wait that holds no thread (a
  /// coroutine parked until work completes) would never end there: the pipelines' next()
  /// drives on the awaiting thread instead, as progress() does. The default says so for
  /// virtual time.
  [[nodiscard]] virtual bool runs_only_when_driven() const noexcept { return virtual_time(); }

  /// True when the calling thread drives this scheduler (drive_section, drive_until) outside
  /// any runnable, with a run queue of its own: work it posts now goes to that queue, where it
  /// runs next unless another thread takes it. The default says false.
  [[nodiscard]] virtual bool drives_here() const noexcept { return false; }

  /// True when the calling thread runs no work of this scheduler at all, nor of another of its
  /// kind (a thread pool: inside none of any pool's runnables, driving none): work it posts
  /// goes to the scheduler's shared queue. The default says false.
  [[nodiscard]] virtual bool runs_no_work_here() const noexcept { return false; }

  /// True when work posted from the calling thread now would run on this thread, once it is
  /// back in the scheduler, and on no other: the scheduler has no thread of its own
  /// (runs_only_when_driven: a pool without workers) and this thread is outside any of its
  /// runnables, driving it (drives_here) or running no work at all (runs_no_work_here). A
  /// caller with ready work may then run all of it at once, in the order it would have posted
  /// it, instead of posting it: the same thread runs it, without a queue's round trip.
  /// (Another thread driving the same pool at that moment could have taken some of it.) The
  /// clock engine's period releases do, with one thread.
  [[nodiscard]] bool sole_runner_here() const noexcept {
    return runs_only_when_driven() && (drives_here() || runs_no_work_here());
  }

  /// Posts made on this thread while a PostBatch lives are announced to other threads once,
  /// when the (outermost) batch ends, instead of once each: one fence and one look for idle
  /// threads per batch. Nothing may block while a batch is open (the posts may be hidden
  /// from idle threads until it ends). Batches nest.
  ///
  /// Example: `{ Scheduler::PostBatch batch(scheduler); a.submit(j1); b.submit(j2); }`
  class PostBatch {
   public:
    explicit PostBatch(Scheduler& s) noexcept : scheduler_(s) { scheduler_.begin_post_batch(); }
    ~PostBatch() { scheduler_.end_post_batch(); }
    PostBatch(const PostBatch&) = delete;
    PostBatch& operator=(const PostBatch&) = delete;

   private:
    Scheduler& scheduler_;
  };

  /// Where the calling thread is this scheduler's only runner and drives it from outside any
  /// runnable (a pool without workers: the thread in a pipeline's progress()), posts made on
  /// this thread while a RunHere lives are kept and run by this thread when the scope ends,
  /// before its destructor returns: in post order, each followed by what it posts in turn
  /// (its post_next first), as the thread's next drive would have run them, but without a
  /// queue's round trip and without waiting for that drive. Elsewhere (a scheduler with
  /// threads of its own, inside a runnable, a PostBatch open) the scope changes nothing and
  /// posts go as usual.
  ///
  /// Completion: everything posted in the scope has run, or was posted as usual after a long
  /// run of work (a runnable that keeps re-posting itself cannot hold the thread: after a
  /// bounded number of runnables the rest goes to the scheduler, where the next drive finds
  /// it). Errors: none (runnables do not throw). Nothing may block in the scope: what it posted
  /// is hidden from every thread until it ends (a drive_until inside it, or inside a runnable
  /// its end runs, first takes what it kept); take no lock a posted runnable could need. The
  /// data-flow engine opens one around an admission's releases (the source is called before
  /// it), so with one thread an admitted iteration's ready tasks run at once.
  ///
  /// Example: `{ Scheduler::RunHere here(scheduler); lane.submit(job); }  // job ran here`
  class RunHere {
   public:
    explicit RunHere(Scheduler& s) noexcept : scheduler_(s), open_(s.begin_run_here()) {}
    ~RunHere() {
      if (open_) scheduler_.end_run_here();
    }
    RunHere(const RunHere&) = delete;
    RunHere& operator=(const RunHere&) = delete;

    /// Whether posts are kept to run here as the scope ends (false where the scope changes
    /// nothing): this thread is then the scheduler's only runner until it ends.
    [[nodiscard]] bool open() const noexcept { return open_; }

   private:
    Scheduler& scheduler_;
    bool open_;
  };

  /// Offers `r` from a thread that drives this scheduler outside any runnable (drives_here):
  /// `r` becomes this thread's next work, which another thread takes only when this one is slow
  /// to get to it (as any thread's next work: it made no progress for a while; see
  /// ThreadPoolScheduler), and idle threads are told, as for a post (all but one that looks
  /// again within a patience, which takes `r` too if this one stops making progress). The
  /// caller then does, in place, the work `r` stands for, piece by piece (calling
  /// ran_in_place after each piece, or after every few when pieces are short, and once at the
  /// end), and takes `r` back with withdraw(r). Meant for a batch of work items that `r`
  /// claims one at a time when another thread runs it: the caller runs items in place at no
  /// queue's cost while the ones it has not reached yet stay where an idle thread can take
  /// them (the clock engine's period, detail::PeriodShare).
  ///
  /// Completion: returns at once. True: `r` is offered (it may run elsewhere from now on, and
  /// be posted again by whoever runs it). False: nothing was offered (a scheduler without
  /// run queues — the default —, a thread inside a runnable, with a PostBatch or RunHere open,
  /// or whose next work is taken): the caller posts its work instead. Errors, cancellation:
  /// none.
  ///
  /// Example (`batch` a Runnable whose run() claims one item, posts itself, runs the item):
  /// `if (s.offer(batch)) { while (Item* i = batch.claim()) { run(*i); s.ran_in_place(); }
  ///                        s.withdraw(batch); }`
  virtual bool offer(Runnable& r) noexcept {
    static_cast<void>(r);
    return false;
  }
  /// Takes back what this thread offered last (offer returned true). True: no other thread
  /// took it (it runs nowhere now and is the caller's again). False: another thread took it,
  /// and runs it or ran it. Work this thread's runnables handed it meanwhile (a drive inside
  /// the in-place work) stays queued.
  virtual bool withdraw(Runnable& r) noexcept {
    static_cast<void>(r);
    return true;
  }
  /// The calling thread, between offer and withdraw, finished a piece of its in-place work: a
  /// sign of life for threads deciding whether it is slow to get to its offered work.
  virtual void ran_in_place() noexcept {}

  /// Watched work: an offer (see offer) that outlives calls, for in-place work that comes
  /// again and again (a pipeline's iterations, each run whole on the thread that drives it).
  /// watch(r) offers `r` where idle threads see it, from any thread and outside any drive,
  /// and returns the counter that is its owner's sign of life: the owner (its only writer,
  /// relaxed) keeps `watch_inside` set in it while it is inside its in-place work and clear
  /// between, and adds 1 after each piece, as ran_in_place does for an offer (the count wraps
  /// below `watch_inside`). An idle thread takes `r` (runs it) as it takes an offer: from an
  /// owner that made no progress over a patience (blocked in its work, descheduled, or doing
  /// something else for a while), or, while it is inside, that is slow to get through its
  /// pieces (work worth moving); so `r`'s
  /// run() must find out whether the owner is inside its work, and leave at once if not. A
  /// taken `r` is in no offer until rewatch(r) (once its run is over, the owner's to tell).
  /// Nothing per piece but the counter: no read-modify-write, no queue.
  ///
  /// Completion: returns at once. The counter (it lives as long as the watch): `r` is
  /// watched; idle threads are told, as for an offer. nullptr: not watched (a scheduler
  /// without other threads — the default —, or every watch in use): the owner does its work
  /// another way. Errors, cancellation: none.
  ///
  /// Example: `if (auto* life = s.watch(w)) { ... inside: life->store(life->load() | inside);
  ///            each piece: life->store(life->load() + 1); between: & ~watch_inside ...;
  ///            ... if (!s.take_back(w)) wait_until_its_run_is_over(); s.unwatch(w); }`
  static constexpr std::uint32_t watch_inside = std::uint32_t{1} << 31;
  virtual std::atomic<std::uint32_t>* watch(Runnable& r) noexcept {
    static_cast<void>(r);
    return nullptr;
  }
  /// Offers watched `r` again, which is in no offer now (taken, its run over; or taken back).
  virtual void rewatch(Runnable& r) noexcept { static_cast<void>(r); }
  /// Takes watched `r` out of its offer. True: it was there (no thread has it). False: a
  /// thread took it (it runs, or ran).
  virtual bool take_back(Runnable& r) noexcept {
    static_cast<void>(r);
    return false;
  }
  /// Ends the watch of `r`, which is in no offer (taken back, or taken and its run over):
  /// nothing of the scheduler refers to it afterwards.
  virtual void unwatch(Runnable& r) noexcept { static_cast<void>(r); }

  /// Wakes threads inside `drive_until` so they evaluate `done()` again, and posts every
  /// Runnable parked with `park_unless`. Any thread. When none waits it costs one fence and
  /// a load or two, so it can follow every task completion.
  void notify() noexcept {
    // seq_cst fence: the caller's condition change, then the loads of the waiter counts. A
    // waiter registers (seq_cst), then re-checks its condition: the store-buffering pattern,
    // so either the waiter sees the change or this sees the waiter. A fence rather than a
    // read-modify-write keeps the counters' cache lines shared when nobody waits, and it also
    // orders a condition store that was only a release.
    detail::seq_cst_fence();
    // relaxed: ordered by the fence above.
    if (parked_count_.load(std::memory_order_relaxed) > 0) post_parked();
    wake_drivers();
  }

  /// Parks `r` until the next `notify()`, which posts it (once), unless `ready()` already
  /// holds: returns true when `r` was parked, false (and `r` untouched) when ready. How a
  /// waiter that holds no thread (a coroutine awaiting a pipeline's next iteration) learns
  /// that something changed: whoever makes its condition true with a seq_cst store and then
  /// calls `notify()` cannot be missed. After a true return the caller must not touch `r`
  /// (another thread may already run it). `ready` runs under a spin lock: a few atomic loads,
  /// no notify().
  template <class Ready>
  bool park_unless(Runnable& r, Ready&& ready) {
    std::lock_guard lock(parked_lock_);
    // Counted before the check: a notifier that changes the condition after the check sees
    // the count and then waits for this lock, by when `r` is queued. The fence pairs with
    // notify()'s: it orders the count before `ready()`'s loads whatever their memory order.
    parked_count_.fetch_add(1, std::memory_order_seq_cst);
    detail::seq_cst_fence();
    if (ready()) {
      parked_count_.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    parked_.push(r);
    return true;
  }

  /// The scheduler's clock: real time for host schedulers, virtual time for SimScheduler.
  [[nodiscard]] virtual Clock::time_point now() const = 0;

  /// True when the scheduler's time is virtual (SimScheduler).
  [[nodiscard]] virtual bool virtual_time() const noexcept { return false; }

  /// True when the calling thread is one the scheduler runs its work on and blocking it would
  /// hold that work back (an AsioScheduler called from a thread running its io_context): the
  /// pipelines refuse a blocking progress()/drain() there (drive_until itself still works,
  /// for the last-resort drain of a destructor).
  [[nodiscard]] virtual bool must_not_block_here() const noexcept { return false; }

 protected:
  /// The scheduler's part of notify(): wake the threads waiting in drive_until. Called after
  /// notify()'s seq_cst fence, so an implementation may read its waiter count relaxed.
  virtual void wake_drivers() noexcept = 0;
  /// A PostBatch begins / ends on this thread (the default announces every post at once).
  virtual void begin_post_batch() noexcept {}
  virtual void end_post_batch() noexcept {}
  /// A RunHere begins on this thread: true when it keeps this thread's posts (then
  /// end_run_here follows, on this thread); the default keeps nothing.
  virtual bool begin_run_here() noexcept { return false; }
  /// The RunHere that begin_run_here kept posts for ends: run them.
  virtual void end_run_here() noexcept {}

 private:
  void post_parked() noexcept {
    detail::IntrusiveFifo<Runnable, &Runnable::next_runnable> parked;
    {
      std::lock_guard lock(parked_lock_);
      std::swap(parked, parked_);
      parked_count_.store(0, std::memory_order_relaxed);
    }
    while (Runnable* r = parked.pop()) post(*r);
  }

  detail::SpinLock parked_lock_;
  detail::IntrusiveFifo<Runnable, &Runnable::next_runnable> parked_;
  std::atomic<int> parked_count_{0};
};

}  // namespace swp
