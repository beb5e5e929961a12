#pragma once
// RunQueueHooks: the optional capability of a scheduler whose threads each have a run queue of
// their own (ThreadPoolScheduler): asking where the calling thread stands, batching its posts,
// keeping them to run here. Users who write a scheduler need none of it:
// Scheduler::run_queue_hooks() says nullptr by default, and run_queue_hooks_of() then gives the
// plain hooks, which do what a scheduler without such queues does.
//
// Why a capability and not more Scheduler virtuals: the Scheduler interface is what every
// scheduler must provide (post, drive_until, now, notify); these are the levers the pipelines'
// fast paths pull on a work-stealing pool, and a scheduler that has no per-thread queues has
// nothing to pull. Callers ask once, where they bind to a scheduler (a Lane, an engine core),
// and keep the reference: the calls cost what the Scheduler virtuals they replace cost.

#include "swp/async/detail/function_ref.hpp"
#include "swp/async/scheduler.hpp"

namespace swp::detail {

/// Every default below is the plain behaviour: what a scheduler without per-thread run queues
/// does (the answer "no" to every question, posts announced at once, nothing kept).
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
