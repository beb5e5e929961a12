#pragma once
// RunQueueHooks: the optional capability of a scheduler whose threads each have a run queue of
// their own (ThreadPoolScheduler): asking where the calling thread stands, batching its posts,
// keeping them to run here, offering work it does in place. Users who write a scheduler need
// none of it: Scheduler::run_queue_hooks() says nullptr by default, and run_queue_hooks_of()
// then gives the plain hooks, which do what a scheduler without such queues does.
//
// Why a capability and not more Scheduler virtuals: the Scheduler interface is what every
// scheduler must provide (post, drive_until, now, notify); these are the levers the pipelines'
// fast paths pull on a work-stealing pool, and a scheduler that has no per-thread queues has
// nothing to pull. Callers ask once, where they bind to a scheduler (a Lane, an engine core),
// and keep the reference: the calls cost what the Scheduler virtuals they replace cost.

#include <atomic>
#include <cstdint>

#include "swp/async/detail/function_ref.hpp"
#include "swp/async/scheduler.hpp"

namespace swp::detail {

/// Every default below is the plain behaviour: what a scheduler without per-thread run queues
/// does (the answer "no" to every question, posts announced at once, nothing kept or offered).
class RunQueueHooks {
 public:
  /// Runs `section` on the calling thread as one driving stretch: every drive_until inside it
  /// and every post from it (outside a runnable too) uses one run queue of the calling thread,
  /// claimed once, so work posted there (a pipeline admitting an iteration between two waits)
  /// goes to that queue rather than to a shared one, and nested drive_until calls claim
  /// nothing. Errors: whatever `section` throws, after the stretch ended. The default just
  /// calls it.
  ///
  /// Example: `hooks.drive_section([&] { admit(); scheduler.drive_until(done, t); });`
  virtual void drive_section(FunctionRef<void()> section) { section(); }

  /// Called from a runnable running on this scheduler: true when nothing was handed to the
  /// calling thread to run right after it (no post_next bypass, no newly posted work that
  /// continues it), so the runnable may go on with more of its own work instead of posting
  /// itself again without keeping anything waiting (a Lane takes a few steps in a row then).
  /// The default says false.
  [[nodiscard]] virtual bool nothing_next_here() const noexcept { return false; }

  /// True when the calling thread drives this scheduler (drive_section, drive_until) outside
  /// any runnable, with a run queue of its own: work it posts now goes to that queue, where it
  /// runs next unless another thread takes it. The default says false.
  [[nodiscard]] virtual bool drives_here() const noexcept { return false; }

  /// True when the calling thread runs no work of this scheduler at all, nor of another of its
  /// kind (a thread pool: inside none of any pool's runnables, driving none): work it posts
  /// goes to the scheduler's shared queue. The default says false.
  [[nodiscard]] virtual bool runs_no_work_here() const noexcept { return false; }

  /// Posts made on this thread while a PostBatch lives are announced to other threads once,
  /// when the (outermost) batch ends, instead of once each: one fence and one look for idle
  /// threads per batch. Nothing may block while a batch is open (the posts may be hidden
  /// from idle threads until it ends). Batches nest.
  ///
  /// Example: `{ RunQueueHooks::PostBatch batch(hooks); a.submit(j1); b.submit(j2); }`
  class PostBatch {
   public:
    explicit PostBatch(RunQueueHooks& h) noexcept : hooks_(h) { hooks_.begin_post_batch(); }
    ~PostBatch() { hooks_.end_post_batch(); }
    PostBatch(const PostBatch&) = delete;
    PostBatch& operator=(const PostBatch&) = delete;

   private:
    RunQueueHooks& hooks_;
  };

  /// Where the calling thread is this scheduler's only runner and drives it from outside any
  /// runnable (a pool without workers: the thread in a pipeline's progress()), posts made on
  /// this thread while a RunHere lives are kept and run by this thread when the scope ends,
  /// before its destructor returns: in post order, each followed by what it posts in turn
  /// (its post_next first), as the thread's next drive would have run them, but without a
  /// queue's round trip and without waiting for that drive. Elsewhere (a scheduler with
  /// threads of its own, inside a runnable, a PostBatch open, the plain hooks) the scope
  /// changes nothing and posts go as usual.
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
  /// Example: `{ RunQueueHooks::RunHere here(pool); lane.submit(job); }  // job ran here`
  class RunHere {
   public:
    explicit RunHere(RunQueueHooks& h) noexcept : hooks_(h), open_(h.begin_run_here()) {}
    ~RunHere() {
      if (open_) hooks_.end_run_here();
    }
    RunHere(const RunHere&) = delete;
    RunHere& operator=(const RunHere&) = delete;

    /// Whether posts are kept to run here as the scope ends (false where the scope changes
    /// nothing): this thread is then the scheduler's only runner until it ends.
    [[nodiscard]] bool open() const noexcept { return open_; }

   private:
    RunQueueHooks& hooks_;
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
  /// be posted again by whoever runs it). False: nothing was offered (the plain hooks, a
  /// thread inside a runnable, with a PostBatch or RunHere open, or whose next work is taken):
  /// the caller posts its work instead. Errors, cancellation: none.
  ///
  /// Example (`batch` a Runnable whose run() claims one item, posts itself, runs the item):
  /// `if (h.offer(batch)) { while (Item* i = batch.claim()) { run(*i); h.ran_in_place(); }
  ///                        h.withdraw(batch); }`
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
  /// pieces (work worth moving); so `r`'s run() must find out whether the owner is inside its
  /// work, and leave at once if not. A taken `r` is in no offer until rewatch(r) (once its run
  /// is over, the owner's to tell). Nothing per piece but the counter: no read-modify-write,
  /// no queue.
  ///
  /// Completion: returns at once. The counter (it lives as long as the watch): `r` is
  /// watched; idle threads are told, as for an offer. nullptr: not watched (the plain hooks, a
  /// pool without other threads, or every watch in use): the owner does its work another way.
  /// Errors, cancellation: none.
  ///
  /// Example: `if (auto* life = h.watch(w)) { ... inside: life->store(life->load() | inside);
  ///            each piece: life->store(life->load() + 1); between: & ~watch_inside ...;
  ///            ... if (!h.take_back(w)) wait_until_its_run_is_over(); h.unwatch(w); }`
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

 protected:
  constexpr RunQueueHooks() noexcept = default;
  // Not deleted through this interface: it is a part of a scheduler, or the plain instance.
  ~RunQueueHooks() = default;
  RunQueueHooks(const RunQueueHooks&) = default;
  RunQueueHooks& operator=(const RunQueueHooks&) = default;

  /// A PostBatch begins / ends on this thread (the default announces every post at once).
  virtual void begin_post_batch() noexcept {}
  virtual void end_post_batch() noexcept {}
  /// A RunHere begins on this thread: true when it keeps this thread's posts (then
  /// end_run_here follows, on this thread); the default keeps nothing.
  virtual bool begin_run_here() noexcept { return false; }
  /// The RunHere that begin_run_here kept posts for ends: run them.
  virtual void end_run_here() noexcept {}
};

/// The hooks of a scheduler that has none of its own: the defaults, stateless, shared.
class PlainRunQueueHooks final : public RunQueueHooks {
 public:
  constexpr PlainRunQueueHooks() noexcept = default;
};

inline constinit PlainRunQueueHooks plain_run_queue_hooks{};

/// The hooks of `s`: its own (Scheduler::run_queue_hooks), else the plain ones. Ask once,
/// where the caller binds to `s`, and keep the reference (it lives as long as `s`).
[[nodiscard]] inline RunQueueHooks& run_queue_hooks_of(Scheduler& s) noexcept {
  RunQueueHooks* own = s.run_queue_hooks();
  return own != nullptr ? *own : plain_run_queue_hooks;
}

/// True when work posted from the calling thread now would run on this thread, once it is
/// back in the scheduler, and on no other: the scheduler `s` (whose hooks are `h`) has no
/// thread of its own (runs_only_when_driven: a pool without workers) and this thread is
/// outside any of its runnables, driving it (drives_here) or running no work at all
/// (runs_no_work_here). A caller with ready work may then run all of it at once, in the order
/// it would have posted it, instead of posting it: the same thread runs it, without a queue's
/// round trip. (Another thread driving the same pool at that moment could have taken some of
/// it.) The clock engine's period releases do, with one thread.
[[nodiscard]] inline bool sole_runner_here(const Scheduler& s, const RunQueueHooks& h) noexcept {
  return s.runs_only_when_driven() && (h.drives_here() || h.runs_no_work_here());
}

}  // namespace swp::detail
