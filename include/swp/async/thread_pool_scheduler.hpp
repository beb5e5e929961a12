#pragma once
// ThreadPoolScheduler: the host scheduler: worker threads with work-stealing run queues, plus
// the threads that wait in drive_until, which help.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "swp/async/detail/event_count.hpp"
#include "swp/async/detail/function_ref.hpp"
#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/detail/run_queue_hooks.hpp"
#include "swp/async/detail/spin_lock.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/async/thread_start.hpp"

namespace swp {

namespace detail {
struct PoolQueue;
struct PoolContext;
}  // namespace detail

/// Runs lanes on `workers` background threads and on every thread that waits in
/// `drive_until` (a pipeline's caller helps instead of sleeping).
///
/// Queues. Each worker, and each thread inside `drive_until` (up to `max_drivers` at once),
/// owns a run queue: a "next" slot plus a bounded FIFO ring (detail::WorkStealingQueue).
/// - `post` from a runnable running on such a thread puts the new work in that thread's slot,
///   which runs right after the current runnable (a chain H2D → InputDist → Forward of one
///   iteration stays on one warm thread); what the slot held moves to the ring's tail.
/// - `post_next` from such a runnable (a lane step ending with the release of the next task in
///   the chain) is a bypass: the new work runs right after the current runnable, before the
///   slot, without a queue or a wake-up. The caller promises to return at once, so the work is
///   hidden from other threads only for that long.
/// - A runnable that re-posts itself (a lane with more steps) goes to the ring's tail instead,
///   behind the work it woke: a busy lane cannot starve the others. A thread runs a chain
///   — the bypass, else the slot, else its ring's next item — of at most `max_chain`
///   runnables before it looks at anything else (its caller's condition, other queues), and
///   the slot's occupant then goes behind the ring, for the same reason. A thread in
///   `drive_until` ends its chain early, after the current runnable, when `notify()` was
///   called since it last looked at its condition (which may hold now).
/// - `post` from any other thread (a stream's worker, a timer, the caller outside
///   `drive_until`) goes to a shared injection queue, which every thread polls, first every
///   61st runnable so local work cannot starve it.
/// - An idle thread takes work from another thread's queue when that thread is slow to get
///   to it: each queue publishes how many runnables its owner ran, and a look after a pause
///   compares it with the last look at that queue. If the owner would need longer for what
///   waits in its queue than moving a runnable costs (about 1 µs), the thief takes the ring's
///   oldest item, or, from an owner that ran nothing meanwhile (a long runnable, blocked,
///   descheduled, gone from `drive_until`), the item it runs next. Work an owner gets through
///   faster stays with it (moving a short task costs more than running it: cache misses on
///   both sides), unless its ring holds a backlog (32 items). A thread that would park while
///   such work is visible parks for `lone_patience` (50 µs) only and looks again.
///
/// Waiting. An idle thread polls (no clock reads), looking at the queues less and less often
/// (down to one look per ~3 µs: a look reads lines the owners write), then parks. While it
/// sees work it leaves to an owner that is moving on, it polls on instead of parking (a
/// parked thread would cost every post a wake-up).
/// Workers park on one EventCount, threads in `drive_until` on another: posted work wakes a
/// parked worker only when no thread is already polling for work (a parked driver when no
/// worker is parked, since all are busy), and `notify()` wakes only the drivers. A post costs
/// a fence (for a slot hand-off, the slot's exchange) and one load while some thread polls, a
/// load or two more when none does; `notify()` with nobody parked, a fence and two loads.
/// A thread woken for work polls again, so a burst of posts wakes one thread, not one each.
///
/// Running here. A thread that is a worker-less pool's only runner may keep its posts for
/// itself (RunQueueHooks::RunHere) and run them when the scope ends, as a chain, with no queue,
/// fence or wake-up: no worker could have run them sooner (another thread driving the same
/// pool meanwhile could have taken some).
///
/// Destruction joins the workers after their current runnable; work still queued is dropped,
/// not run. No thread may be inside `drive_until` then.
///
/// A thread leaving `drive_until` keeps what its runnables left in its queue, which it takes
/// back when it drives again (a pipeline's next `progress()`); meanwhile that work is
/// stealable like any other.
///
/// The pool is its own run-queue capability (detail::RunQueueHooks, which run_queue_hooks()
/// returns): drive sections, post batches and run-here scopes.
class ThreadPoolScheduler final : public Scheduler, public detail::RunQueueHooks {
 public:
  /// At most this many threads at once run `drive_until` with a run queue of their own; more
  /// still help, but the runnables they run post to the injection queue.
  static constexpr unsigned max_drivers = 8;
  /// Slot hand-offs a thread runs in a row before it takes queued work again.
  static constexpr unsigned max_chain = 32;

  /// How long an idle thread polls by default (see the constructor).
  static constexpr std::chrono::microseconds default_spin{20};

  /// `workers` background threads (0: only threads in drive_until run work). `spin` is about
  /// how long an idle thread polls for work (a thread in drive_until also for its condition)
  /// before it parks; it is converted once to a number of polling rounds. Each worker begins
  /// with begin_thread (named "swp-worker<i>", then `on_start`); with a non-empty `lane` the
  /// pool is that lane's own (ThreadStart::Role::lane, named after the lane).
  explicit ThreadPoolScheduler(unsigned workers, std::chrono::microseconds spin = default_spin,
                               ThreadStartHook on_start = {}, std::string lane = {});
  ~ThreadPoolScheduler() override;

  /// Stops the workers and joins them (idempotent; the destructor does it too). Work queued
  /// from then on is not run. For an owner of several schedulers whose threads post into each
  /// other (a runtime's dedicated lanes): join every one before destroying any, so no thread is
  /// still inside a post to a scheduler being freed.
  void join_workers() noexcept;

  ThreadPoolScheduler(const ThreadPoolScheduler&) = delete;
  ThreadPoolScheduler& operator=(const ThreadPoolScheduler&) = delete;

  void post(Runnable& r) noexcept override;
  /// From a runnable running on this scheduler's thread: `r` runs right after it there (one
  /// bypass per runnable; further ones are posted). Elsewhere: post(r).
  void post_next(Runnable& r) noexcept override;

  /// Runs work until `done()` holds (true) or `deadline` passes (false; returns `done()`).
  /// Chains (see above) run to their end before `done()` is checked again, unless `notify()`
  /// is called meanwhile (then the chain ends after its current runnable); when the thread goes
  /// idle, it polls then parks until the deadline, reading the clock once per idle episode
  /// (none for `time_point::max()`). While work keeps coming it checks the deadline every
  /// 64 runnables. `time_point::min()`: run what is runnable now, then return.
  bool drive_until(const std::function<bool()>& done, Clock::time_point deadline) override;

  /// Claims a driver queue for the whole section (see RunQueueHooks::drive_section): posts from
  /// the section go to it, and the drive_until calls inside use it without claiming again.
  void drive_section(detail::FunctionRef<void()> section) override;

  /// No bypass and an empty slot on the calling thread (see RunQueueHooks::nothing_next_here).
  [[nodiscard]] bool nothing_next_here() const noexcept override;

  /// No workers (see Scheduler::runs_only_when_driven).
  [[nodiscard]] bool runs_only_when_driven() const noexcept override { return worker_count_ == 0; }

  /// The calling thread drives this pool outside any runnable, with a driver queue (a driver
  /// beyond max_drivers posts to the shared injector instead; see RunQueueHooks::drives_here).
  [[nodiscard]] bool drives_here() const noexcept override;
  /// The calling thread is inside no pool's runnable and drives none (see
  /// RunQueueHooks::runs_no_work_here).
  [[nodiscard]] bool runs_no_work_here() const noexcept override;

  [[nodiscard]] Clock::time_point now() const override { return Clock::now(); }

  /// This pool itself: its run queues are what the hooks steer.
  [[nodiscard]] detail::RunQueueHooks* run_queue_hooks() noexcept override { return this; }

  [[nodiscard]] unsigned workers() const noexcept { return static_cast<unsigned>(threads_.size()); }

  /// Default worker count: one less than the hardware threads (the caller is the other), min 1.
  static unsigned default_workers() noexcept;

 protected:
  /// Wakes parked drivers; relies on the fence at the start of Scheduler::notify().
  void wake_drivers() noexcept override;
  /// Posts from a thread with a run queue of this scheduler go to it unannounced while a
  /// batch is open; the batch's end announces them once. Elsewhere, posts announce at once.
  void begin_post_batch() noexcept override;
  void end_post_batch() noexcept override;
  /// Keeps posts only in a pool without workers, from a thread outside any of its runnables
  /// (driving it or running no pool's work at all) with no PostBatch open.
  bool begin_run_here() noexcept override;
  void end_run_here() noexcept override;

 private:
  using Queue = detail::PoolQueue;
  using Context = detail::PoolContext;
  class DriverScope;

  void worker_loop(unsigned index) noexcept;
  // Work for the thread `c`: its slot, its ring, the injection queue, then other threads'
  // surplus (notes their lone work in `c`).
  // `paused`: the pause rounds this thread spent since its last look (an idle poller's
  // look; 0: none), over which it tells an owner that is slow to get to its work (see
  // steal_surplus).
  Runnable* find_work(Context& c, unsigned paused = 0) noexcept;
  Runnable* steal_surplus(Context& c, unsigned paused) noexcept;
  // The work the last look left to its owner, if that owner made no progress since the look
  // before this thread's last (timed) park; else notes it for the next time.
  Runnable* take_stuck(Context& c) noexcept;
  // Runs `r`, then the chain it starts: the bypass, the slot, else the thread's own queue
  // (at most max_chain runnables). Returns how many it ran. `seen` (a driver's): notified_
  // when the driver last looked at its condition; the chain ends early once it changed.
  unsigned run_chain(Context& c, Runnable* r, const std::uint32_t* seen = nullptr) noexcept;
  // The next runnable of the thread's own queue (its ring; now and then the injection queue).
  Runnable* local_work(Context& c) noexcept;
  // A worker with nothing to do: polls, then parks. nullptr: stop requested.
  Runnable* worker_idle(Context& c) noexcept;
  // After work was published (and a seq_cst fence or exchange): wakes a thread if none polls.
  void wake_helper() noexcept;
  // This thread stops polling for work; if it was the last, hands on what is visible.
  void stop_searching() noexcept;
  [[nodiscard]] bool has_visible_work() const noexcept;
  void push_local(Context& c, Runnable& r) noexcept;
  void inject(Runnable& r) noexcept;
  Runnable* pop_injected() noexcept;
  Queue* claim_driver_queue() noexcept;
  // A drive starts inside a RunHere of this thread: what the scope kept goes to the queue of
  // the drive's context `to` (null: `from` itself, which then keeps nothing more).
  void take_kept(Context& from, Context* to = nullptr) noexcept;
  void release_driver_queue(Queue& q) noexcept;

  unsigned worker_count_;
  unsigned spin_rounds_;  // polling rounds before parking
  unsigned move_rounds_;  // pause rounds as long as moving work to another thread costs
  unsigned look_rounds_;  // pause rounds between an idle poller's looks, at most
  // Workers first, then max_drivers for drivers.
  std::unique_ptr<Queue[]> queues_;
  std::atomic<unsigned> queues_in_use_;         // how many of queues_ thieves look at

  detail::SpinLock inject_lock_;
  detail::IntrusiveFifo<Runnable, &Runnable::next_runnable> injected_;  // guarded by inject_lock_
  std::atomic<std::size_t> injected_count_{0};  // lets pollers skip the lock when empty

  alignas(64) std::atomic<int> searching_{0};  // threads polling for work right now
  alignas(64) detail::EventCount idle_workers_;
  alignas(64) detail::EventCount idle_drivers_;
  // notify() calls so far (wrapping): a driver inside a chain looks at it between runnables.
  alignas(64) std::atomic<std::uint32_t> notified_{0};
  std::atomic<bool> stop_{false};
  ThreadStartHook on_start_;
  std::string lane_;  // non-empty: the dedicated pool of this lane
  std::vector<std::jthread> threads_;
};

}  // namespace swp
