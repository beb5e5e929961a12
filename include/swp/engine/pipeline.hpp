#pragma once
// The public face both engines share (seed _PipelineBase): fill_pipeline / progress / drain /
// run / run_serial / run_one_serial_iter, over typed per-iteration contexts. The Asio
// completion-token form is in swp/engine/asio.hpp, the range form in iterations.hpp.

#include <algorithm>
#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swp/core/pipeline_plan.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/core/schedule_table.hpp"
#include "swp/core/stage_analysis.hpp"
#include "swp/engine/detail/engine.hpp"
#include "swp/engine/detail/feed.hpp"
#include "swp/engine/detail/front_end.hpp"
#include "swp/engine/detail/pipeline_context.hpp"
#include "swp/engine/detail/shortcut_routine.hpp"
#include "swp/engine/detail/shortcut_state.hpp"
#include "swp/engine/detail/synthetic_routine.hpp"
#include "swp/engine/engine_timeouts.hpp"
#include "swp/engine/failure_policy.hpp"
#include "swp/engine/iter_context.hpp"
#include "swp/engine/iterations.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/retired.hpp"
#include "swp/engine/run_stats.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/engine/shortcut.hpp"
#include "swp/engine/source.hpp"
#include "swp/engine/stop_scope.hpp"
#include "swp/engine/task_body.hpp"
#include "swp/engine/task_observer.hpp"

namespace swp {

/// The engine-independent part of a pipeline over contexts `Ctx` (an IterContext).
///
/// Completion: `progress()` blocks the calling thread (which helps run tasks meanwhile) until
/// the oldest in-flight iteration retired — all its tasks submitted (with
/// retire_after_device, also their device work completed) — and returns it (swp::Retired:
/// its number, its context, its tasks' values), or an empty optional at end of data. Errors
/// end the run once, after everything in flight drained: a task's exception surfaces from
/// `progress()` as TaskError (task name, iteration, nested exception); the source's or a
/// callback's as CallbackError (errors.hpp says from which call); a hang as PipelineTimeout
/// naming every unfinished (task, iteration), its lane and stream and what it waits for.
/// Either way the pipeline can be filled again, and every iteration admitted was either
/// retired or handed to on_failure with why it did not (see FailurePolicy; `skip` keeps a
/// run going past a failed iteration).
/// Destruction drains a filled pipeline; a body that ignored cancellation is waited for up to
/// EngineTimeouts::drain (once in all: the drain of a run that the destructor ended spends
/// it), then the process ends with a fatal error naming it (freeing the pipeline under a
/// running body would corrupt memory; see docs/engine.md). So it does at once where nothing
/// can be waited for: on a thread of a stopped io_context that runs the lanes
/// (AsioScheduler), the report saying so.
/// The engines run a `swp::Plan<Ctx>` (typed bodies) or a plain PipelinePlan, whose tasks,
/// having no body, run their synthetic costs; so do the tasks of a Plan<Ctx> left unbound.
template <detail::PipelineContext Ctx>
class Pipeline : private detail::FrontEnd {
 public:
  using Batch = typename Ctx::batch_type;
  using Source = swp::Source<Batch>;

  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  virtual ~Pipeline() = default;

  /// Starts a run over `source` (see swp::SourceOf):
  /// - an input range of Batch (a named range is borrowed: iterated in place, it must outlive
  ///   the run; a temporary is moved in and owned), or a callable returning
  ///   std::optional<Batch> (empty: end of data; copied, std::ref shares one): called
  ///   synchronously, one batch per call. make_source (source.hpp) has the ownership table;
  /// - an awaitable source, a callable returning `swp::Co<std::optional<Batch>>`: a coroutine
  ///   that may suspend until it has the next batch ("nothing yet"); the iterations in flight
  ///   keep running and retiring meanwhile, and the pipeline admits the batch when it comes;
  /// - a `swp::Channel<Batch>&` (the push form; must outlive the run): batches as producers
  ///   send them, until the channel is closed and empty. See also submit().
  ///
  /// Where the source runs: never in fill_pipeline. Each batch is asked for from inside
  /// progress()/next()/drain(), on their thread, one call at a time, as a slot frees. An
  /// awaitable source (or a channel receive) that suspends continues on whichever thread
  /// resumes it (a producer's send, a lane completing a future, a timer), never while the
  /// pipeline holds a lock. While nothing is in flight and the source has nothing yet,
  /// progress() and next() wait for it without a deadline (cancel() ends the wait).
  ///
  /// Iteration numbers continue across runs: a run filled after an earlier one (drained, ended,
  /// or failed) numbers its first iteration after the last one admitted before. A run whose
  /// source ended and whose iterations all retired (progress() returned no iteration) may be
  /// filled again without drain(): the run goes on, its next iteration depending on the last
  /// one through the plan's inter-iteration dependencies as within a run. Otherwise a new run
  /// starts, whose first iteration has no iteration before it.
  /// Errors: PipelineStateError while iterations are in flight (or when broken, see the class
  /// comment); the source's errors surface later, from progress()/next() (CallbackError).
  /// After a serial run, a new run first waits (retire deadline) for the device work the
  /// serial iterations queued on "default": PipelineTimeout naming the stream past it
  /// (nothing changed; the next fill waits again).
  template <SourceOf<Batch> S>
  void fill_pipeline(S&& source) {
    core_.check_fillable();
    feed_.set(std::forward<S>(source));
    core_.fill();
  }

  /// The push form, for services: starts a run (as fill_pipeline) fed by submit(), on a
  /// channel the pipeline owns, where up to `capacity` submitted batches wait beyond those in
  /// flight. The run ends once close_submissions() was called and every batch submitted
  /// before retired. Same errors as fill_pipeline; std::invalid_argument for capacity 0.
  /// Example:
  /// ```
  /// pipe.fill_submissions(64);
  /// co_await pipe.submit(request);      // a producer (any thread or coroutine)
  /// while (auto iter = co_await pipe.next()) answer(*iter);  // the driver
  /// pipe.close_submissions();           // at shutdown: the driver's loop then ends
  /// ```
  void fill_submissions(std::size_t capacity) {
    core_.check_fillable();
    if (inbox_ == nullptr) {
      inbox_ = std::make_unique<Channel<Batch>>(capacity);
    } else {
      // One inbox for the pipeline's life: a producer may still hold it (a submit refused
      // when the last run ended). Closed since: by close_submissions, or by that end.
      inbox_->reopen(capacity);
    }
    feed_.set(*inbox_);
    core_.fill();
  }

  /// Submits a batch to the run fill_submissions() started. Awaitable (from any coroutine,
  /// any thread): completes once the batch is queued, suspending while `capacity` batches
  /// wait (back-pressure); the driver admits queued batches as slots free, in submission
  /// order. Every batch queued reaches on_retire or on_failure exactly once: when the run
  /// ends before admitting it — cancel(), a failure, drain(), the pipeline's destruction —
  /// on_failure gets it with swp::Cancelled naming why, in a context whose `iter_idx` is -1
  /// (never admitted), and the queue closes until the next fill_submissions().
  /// Errors: swp::ChannelClosed after close_submissions() or after such an end,
  /// PipelineStateError before any fill_submissions().
  /// Cancellation: under a StopSignal the wait throws swp::Cancelled.
  /// Who keeps a batch that was not queued (ChannelClosed, Cancelled): `submit(batch)` with a
  /// (non-const) lvalue moves from it only once it is queued, so the caller still has it,
  /// untouched (as with try_submit); keep it alive until the co_await completes.
  /// `submit(std::move(batch))` and `submit(temporary)` hand it to the awaiter, which
  /// destroys a refused batch with itself. The Asio form is `swp::async_submit(pipe, batch,
  /// token)` (swp/engine/asio.hpp).
  /// g++ 12 miscompiles a braced aggregate temporary inside any co_await expression (it is
  /// destroyed twice; docs/building.md, "Compiler defects"): there, write
  /// `co_await pipe.submit(batch)` with a named batch, or give Batch a constructor.
  [[nodiscard]] typename Channel<Batch>::SendAwaiter submit(Batch& batch) {
    return inbox().send(batch);
  }
  /// submit() of a batch the awaiter takes over (destroyed if refused or cancelled).
  [[nodiscard]] typename Channel<Batch>::SendAwaiter submit(Batch&& batch) {
    return inbox().send(std::move(batch));
  }
  /// submit() of a copy of `batch` (a refused copy is destroyed; `batch` is untouched).
  [[nodiscard]] typename Channel<Batch>::SendAwaiter submit(const Batch& batch) {
    return inbox().send(batch);
  }
  /// submit() without waiting: true when the batch was queued (moved from); false when the
  /// queue is full or closed (the batch is untouched).
  bool try_submit(Batch& batch) { return inbox().try_send(batch); }
  /// Ends the submissions: batches already submitted still run; then progress()/next()
  /// report the end of data. Waiting submit()s throw swp::ChannelClosed. Any thread.
  void close_submissions() { inbox().close(); }

  /// Retires the oldest in-flight iteration and lets the next ones in, and returns it (valid
  /// until the next retirement, see swp::Retired); see the class comment. Where the calling
  /// thread runs everything (one thread), the batches come in once no complete iteration is
  /// left to retire (the next call's), each after the retirement that freed its slot, as in
  /// run(). On a thread running the io_context the lanes run on (swp::AsioRuntime), a call
  /// that would have to wait throws PipelineStateError (it would stall the handlers it waits
  /// for; use next() or swp::async_progress there); so does drain() with iterations in flight.
  /// One call drives a pipeline at a time: progress(), run(), next() or drain() called while
  /// another runs — from its on_retire, on_failure, source or a task body, or from another
  /// thread — throws PipelineStateError naming both, before it touches the run (from
  /// on_retire it would retire the same iteration again); cancel() is the call for there.
  std::optional<Retired<Ctx>> progress() { return retired(core_.progress()); }

  /// The coroutine form of progress(): the same result (the retired iteration, swp::Retired)
  /// and errors, but the awaiting coroutine
  /// suspends (no thread blocks) until the oldest in-flight iteration retired and the slot it
  /// frees may take the next batch. The retirement (on_retire, the source's next batch) then
  /// runs on the thread that resumes the coroutine (its Resumer's, or the one that completed
  /// the wait). Lanes keep running meanwhile on the runtime's workers (workers >= 1) or on the
  /// Asio threads of an AsioScheduler. Where nothing but a driving thread runs them — the sim
  /// backend, a pool without workers (Scheduler::runs_only_when_driven) — it is progress(),
  /// which drives on the awaiting thread. Deadlines are progress()'s, kept by one periodic
  /// timer per run (no allocation and no timer-thread wake-up per wait).
  /// One progress()/next()/async_progress() at a time; keep the pipeline alive until it ends.
  /// The Asio completion-token form is `swp::async_progress(pipe, token)` (swp/engine/asio.hpp).
  ///
  /// Example:
  /// ```
  /// swp::Co<void> train(Pipe& pipe, Loader& loader) {
  ///   pipe.fill_pipeline(loader);
  ///   while (auto retired = co_await pipe.next()) log(retired->iter(), retired->context().loss);
  /// }
  /// ```
  Co<std::optional<Retired<Ctx>>> next() { co_return retired(co_await core_.next()); }

  /// next() whose wait cancels the run (as `cancel("stop requested")`) when `token` is stopped
  /// meanwhile, or was stopped already: it then throws swp::Cancelled once the run drained.
  /// The token cancels the whole run, not only this wait (DESIGN decision 7); see the
  /// overload with a StopScope to end only the wait.
  /// Example: `auto iter = co_await pipe.next(stop_source.get_token());`
  Co<std::optional<Retired<Ctx>>> next(std::stop_token token) {
    co_return retired(co_await core_.next(std::move(token)));
  }

  /// next() stopped by `token` with the given scope (see StopScope): `run` as next(token);
  /// `wait` ends only this wait — it throws swp::Cancelled("wait stopped; the run goes on")
  /// at once (also when the token was stopped already), having retired nothing, and the run
  /// goes on: the next call continues it. An iteration that retired before the stop is still
  /// returned. What the Asio idiom `async_progress(...) || timer.async_wait(...)` needs.
  /// Example: `auto r = co_await pipe.next(timeout.get_token(), swp::StopScope::wait);`
  Co<std::optional<Retired<Ctx>>> next(std::stop_token token, StopScope scope) {
    if (scope == StopScope::run) co_return retired(co_await core_.next(std::move(token)));
    StopSignal abandon;
    std::stop_callback on_stop(token, [&abandon] {
      abandon.request_stop("wait stopped; the run goes on");
    });
    co_return retired(co_await core_.next(&abandon));
  }

  /// next() that ends only its wait when `abandon` fires (StopScope::wait's mechanism, for
  /// adapters such as swp::async_progress): Cancelled(`abandon`'s reason), nothing retired,
  /// the run goes on. `abandon` must outlive the call.
  Co<std::optional<Retired<Ctx>>> next(const StopSignal& abandon) {
    co_return retired(co_await core_.next(&abandon));
  }

  /// Cancels the run in flight, from any thread (a signal handler's thread, an Asio handler, a
  /// task body): the run's stop signal fires, so every cancellable wait of every in-flight
  /// instance (dependencies, futures, turns, `co_await` on swp awaitables) wakes with
  /// swp::Cancelled; instances not started yet finish without running; bodies that do not
  /// await run to their end. Once everything released finished, the progress()/next()/
  /// async_progress() in progress — or the next one — throws
  /// `swp::Cancelled("pipeline cancelled: " + reason)`; iterations in flight do not retire (no
  /// on_retire). The pipeline can then be filled again.
  /// Returns true when it cancelled a run in flight; false when none was, or the run had
  /// already failed (that failure is what surfaces).
  /// Example: `std::signal(...)` -> `pipe.cancel("SIGTERM");` then `progress()` throws.
  bool cancel(const std::string& reason) { return core_.cancel(reason); }

  /// Retires everything in flight without taking new batches; the pipeline can be filled
  /// again afterwards (with another source). A wait for the source is cancelled: a batch it
  /// gives all the same (its await ignored the cancellation) is not admitted but goes to
  /// on_failure (`iter_idx` -1, swp::Cancelled), as batches queued for submit() do.
  /// Errors: what retiring throws (as progress()); a source's fetch that does not return
  /// within EngineTimeouts::drain after its cancellation makes it throw PipelineTimeout
  /// naming the fetch, and the pipeline is broken until the fetch returned (see
  /// EngineTimeouts::drain).
  void drain() { core_.drain(); }

  /// Range form: fills the pipeline from `source` and yields every retired iteration index
  /// (see swp::Iterations). Errors surface from the iterator increment as from progress().
  /// Example: `for (std::int64_t iter : pipe.iterations(loader)) log(iter);`
  template <SourceOf<Batch> S>
  auto iterations(S&& source) {  // deduced: Iterations checks Pipeline, complete only here
    fill_pipeline(std::forward<S>(source));
    return Iterations<Pipeline>(*this);
  }

  /// fill_pipeline + progress until end of data + device synchronization.
  template <SourceOf<Batch> S>
  RunStats run(S&& source) {
    const auto start = core_.runtime().now();
    fill_pipeline(std::forward<S>(source));
    RunStats stats;
    stats.iterations = core_.retire_all();  // progress() until the end, in one call
    core_.drain();
    synchronize_streams();
    core_.throw_host_work_error();  // what no retirement reported (its device work was late)
    stats.elapsed = core_.runtime().now() - start;
    return stats;
  }

  /// Runs every iteration serially on the calling thread, all device work on the "default"
  /// stream, no overlap: the baseline a pipelined run is compared to. Its iterations are
  /// numbered on from the pipeline's (next_iteration()), as a run's are: the first gets
  /// next_iteration(), and a run after it numbers after its last.
  /// Each iteration after the first starts once the device work of the one before it
  /// completed, as for back-to-back run_one_serial_iter calls (see there); with
  /// retire_after_device each one's on_retire comes once its own device work completed, and
  /// one whose device work failed (a callable's error, a fault) ends the call instead. It
  /// returns once "default" is synchronized. Deadlines, cancellation and errors are
  /// run_one_serial_iter's (those of the wait before on_retire included), for the whole call:
  /// cancel() ends it, and so does an iteration that fails (no later iteration starts).
  template <PullSourceOf<Batch> S>
  RunStats run_serial(S&& source) {
    auto next = make_source<Batch>(std::forward<S>(source));
    const auto start = core_.runtime().now();
    RunStats stats;
    {
      // An ended run ends for good (see run_one_serial_iter).
      const detail::Engine::SerialRun serial(core_, "run_serial");
      for (;;) {
        auto batch = next();
        if (!batch) break;
        serial_iteration(std::move(*batch), core_.next_iteration());
        ++stats.iterations;
      }
    }
    core_.runtime().stream("default").synchronize();
    core_.throw_host_work_error();  // a callable of a task that threw (TaskScope::enqueue)
    stats.elapsed = core_.runtime().now() - start;
    return stats;
  }

  /// One serial iteration of `batch` as iteration `iter_idx`, tasks in topological order on the
  /// calling thread. Leaves nothing in flight. Throws TaskError naming the failing task.
  /// `iter_idx` is the caller's to choose; the pipeline's own numbers go on after it
  /// (next_iteration() is then at least iter_idx + 1), so no later run or run_serial reuses it.
  /// Before its first task it waits (retire deadline) for the device work of the pipelined
  /// iterations before it, whose context slots it and the run after it reuse, and for the
  /// device work the serial iterations before it queued on "default": that work may still
  /// read slot 0 (the context and the tasks' buffers there), which this call is about to
  /// overwrite. It returns once its bodies returned, before its own device work (on
  /// "default") completed; the next serial iteration or fill_pipeline waits for that (retire
  /// deadline), so neither overlaps it. With retire_after_device it waits for that work
  /// (retire deadline) after its bodies, before on_retire, which then sees what the device
  /// wrote into the context, and returns once it completed. Timing: back-to-back calls
  /// (TaskProfiler's rounds) therefore each take the serial iteration's CPU time plus its
  /// device work's tail: the next call's bodies no longer run under the previous call's
  /// device work, and that wait is counted in the next call (the last call's tail is waited
  /// for by whoever synchronizes; with retire_after_device, in the call itself).
  /// The wait's errors: past the deadline PipelineTimeout "device work of serial iterations
  /// on stream 'default' did not complete within N ms, so serial iteration <iter_idx> cannot
  /// start ..." (on_run_failed told; slot 0 unchanged; waited for again next time); cancel()
  /// during it throws swp::Cancelled as below. The wait before on_retire (retire_after_device)
  /// fails alike ("..., so serial iteration <iter_idx> cannot retire ...", on_run_failed told;
  /// cancel() throws swp::Cancelled), and the iteration then does not retire, as one whose
  /// task failed: no on_retire, the call throws instead; what its bodies wrote stays in slot
  /// 0, and its device work is waited for again before the next serial iteration or run
  /// writes there. Once that work completed, what failed in it fails the iteration as in a
  /// pipelined run with retire_after_device, before on_retire: a callable a task queued
  /// (TaskScope::enqueue) that threw, or a fault of "default" (DeviceFault), is thrown as a
  /// TaskError naming that task and iter_idx (for a fault, the first task that queued work on
  /// "default": one event covers the iteration's work there), as a body's error is — no
  /// on_retire, no on_run_failed, and the callable's error is not reported again by
  /// synchronize() or run_serial()'s end. Without retire_after_device such an error surfaces
  /// from the end of run_serial() or from synchronize(), possibly after on_retire saw the
  /// iteration, and never from a later call with the same iter_idx (whose own work is what
  /// that call looks at).
  /// Deadlines (EngineTimeouts), as a run's iteration: past `retire` (on sim: a body awaiting
  /// what nothing provides) it throws PipelineTimeout naming the task and iteration, once the
  /// body's await was cancelled; a body that ignores that past `drain` leaves the pipeline
  /// broken until it returns. Cancellation: cancel() (another thread, a body, on_retire) ends
  /// it as it ends a run — the body's cancellable awaits throw swp::Cancelled, no later task
  /// runs, and it throws `swp::Cancelled("pipeline cancelled: " + reason)`; on_run_failed is
  /// told of a deadline or a cancel, as for a run. While it runs (its on_retire included) it
  /// drives the pipeline: progress(), fill_pipeline() and the between-runs setters are refused
  /// (PipelineStateError). PipelineStateError while a run is in progress.
  void run_one_serial_iter(Batch batch, std::int64_t iter_idx) {
    // Checked (and a run that ended ended) before slot 0 is written: a refused call leaves
    // the context of the iteration in it as it was.
    const detail::Engine::SerialRun serial(core_, "run_one_serial_iter");
    serial_iteration(std::move(batch), iter_idx);
  }

  /// Called on the caller's thread with the context of every iteration as it retires (in
  /// progress(), before its slot is reused): where results such as a loss are read. An
  /// exception from it fails the run (CallbackError from that progress()). It may call
  /// cancel(), not progress()/run()/next()/drain() (refused: see progress()).
  void on_retire(std::function<void(const Ctx&)> callback) { on_retire_ = std::move(callback); }

  /// Called on the caller's thread (in progress()/next()/drain(), which throw the run's error
  /// right after) with the context of every admitted iteration that does not retire, and why:
  /// under FailurePolicy::skip a failed iteration in its turn (a TaskError naming the task);
  /// when a run fails or is cancelled, each iteration still in flight once everything drained
  /// (the failed one with its TaskError, or the deadline's PipelineTimeout / the callback's
  /// CallbackError; the others with swp::Cancelled naming the cause). With on_retire it
  /// accounts for every iteration exactly once: a service answers or rejects every request.
  /// Not called when the run could not drain (bodies still write the contexts; the
  /// PipelineTimeout then names the iterations not reported). An exception from it fails the
  /// run (skip) or replaces the run's error once every iteration was reported, as a
  /// CallbackError whose message keeps the run's failure.
  /// Example:
  /// ```
  /// pipe.on_failure([](const Ctx& ctx, std::exception_ptr why) { reject(ctx.batch, why); });
  /// ```
  void on_failure(std::function<void(const Ctx&, const std::exception_ptr&)> callback) {
    on_failure_ = std::move(callback);
  }

  /// Called once per failing run, at the moment it fails — before it drains and before
  /// progress()/next() throw — on the thread where it failed (the lane of the failing task,
  /// a timer's, the caller of cancel()), with the run's error: a TaskError naming the task
  /// and iteration, a PipelineTimeout, a CallbackError, or cancel()'s swp::Cancelled. Not
  /// called for an iteration that fails under FailurePolicy::skip (the run goes on). What it
  /// is for: telling others at once, e.g. the other ranks of a job
  /// (`swp::abort_peers_on_failure(pipe, comm)`, swp/comm/abort_on_failure.hpp). Keep it
  /// short and thread-safe; it must not call back into the pipeline; what it throws is
  /// ignored. Set it between runs (PipelineStateError otherwise).
  /// Example: `pipe.on_run_failed([&](const std::exception_ptr&) { alarm.store(true); });`
  void on_run_failed(std::function<void(const std::exception_ptr&)> callback) {
    core_.set_on_run_failed(std::move(callback));
  }

  /// What a task's error does to the run: fail_run (the default) or skip (see FailurePolicy).
  /// Errors: PipelineStateError while a run is in progress: iterations in flight or its
  /// source not ended (retire them, or drain() first). Between runs — also after progress()
  /// returned no iteration — it may be set; so may retire_after_device and the shortcuts.
  void set_failure_policy(FailurePolicy policy) { core_.set_failure_policy(policy); }
  [[nodiscard]] FailurePolicy failure_policy() const noexcept { return core_.failure_policy(); }

  /// With `on`, an iteration retires only once its device work completed too (every event its
  /// tasks recorded reached), not only once its tasks submitted it: on_retire and
  /// progress()/next() then see results the device wrote into the context (a host stream's
  /// work, a device-to-host copy). The wait has the retire deadline (PipelineTimeout naming
  /// the device work not complete). Serial runs honour it too: a serial iteration calls
  /// on_retire once its device work on "default" completed, and not at all when a callable
  /// of it threw or "default" faulted: the serial call throws that TaskError instead
  /// (run_one_serial_iter tells that wait's errors and cancellation). Off by default:
  /// retiring at submission lets the CPU run ahead of the device by the pipeline's depth.
  /// Either way a context slot is reused only after its previous iteration's device work
  /// completed (DESIGN decision 8).
  /// Errors: PipelineStateError while a run is in progress (see set_failure_policy).
  /// Example: `pipe.retire_after_device(); pipe.on_retire([](const Ctx& c) { log(c.host_loss); });`
  void retire_after_device(bool on = true) { core_.set_retire_after_device(on); }
  [[nodiscard]] bool retire_after_device_enabled() const noexcept {
    return core_.retire_after_device();
  }

  /// Shortcuts the named tasks (seed enable_shortcut): the next execution of each one caches
  /// (runs the body, then snapshots its declared writes and output value and calls each
  /// DeclaredIO's `capture`); every later execution replays (skips the body, writes a copy of
  /// the snapshot back, calls each DeclaredIO's `restore`). What replay guarantees is in
  /// shortcut.hpp (swp::Writes). A globally ordered task still takes its submission turn, so
  /// every rank submits the same sequence; all ranks must shortcut the same tasks. Works in
  /// pipelined and serial modes; a task without a body skips its synthetic costs.
  /// Enabling an already shortcut task keeps its cache. Normal execution costs one flag test.
  /// Errors: std::invalid_argument naming every unknown task (nothing is enabled then) or a
  /// task whose output type cannot be copied; PipelineStateError while a run is in progress.
  ///
  /// Example:
  /// ```
  /// pipe.enable_shortcut("EmbLookup", "Prefetch");
  /// pipe.run_one_serial_iter(batch, 0);  // caches
  /// pipe.run_one_serial_iter(batch, 1);  // replays: EmbLookup and Prefetch are skipped
  /// ```
  template <class... Names>
  requires(std::convertible_to<const Names&, std::string_view>&&...) void enable_shortcut(
      const Names&... names) {
    set_shortcut(std::vector<std::string_view>{std::string_view(names)...}, true);
  }
  void enable_shortcut(const std::vector<std::string>& names) {
    set_shortcut(std::vector<std::string_view>(names.begin(), names.end()), true);
  }

  /// Ends the named tasks' shortcut and drops their caches (seed disable_shortcut); with no
  /// names, every task's. Same errors as enable_shortcut for unknown names and while filled.
  template <class... Names>
  requires(std::convertible_to<const Names&, std::string_view>&&...) void disable_shortcut(
      const Names&... names) {
    if constexpr (sizeof...(Names) == 0) {
      std::vector<std::string_view> all;
      for (TaskIndex t = 0; t < core_.graph().size(); ++t) all.emplace_back(core_.graph().name(t));
      set_shortcut(all, false);
    } else {
      set_shortcut(std::vector<std::string_view>{std::string_view(names)...}, false);
    }
  }
  void disable_shortcut(const std::vector<std::string>& names) {
    set_shortcut(std::vector<std::string_view>(names.begin(), names.end()), false);
  }

  /// The stage analysis of the plan (seed print_stage_analysis): topological positions,
  /// the longest decreasing stage subsequence, the depth and the Dilworth verdict.
  [[nodiscard]] std::string format_stage_analysis() const {
    return swp::format_stage_analysis(core_.graph(), analyze_stages(core_.graph()));
  }

  /// The names of the shortcut tasks.
  [[nodiscard]] std::set<std::string> shortcuts() const { return shortcuts_.names(core_.graph()); }

  /// Waits until every stream of the plan (and "default", the serial runs' stream) completed
  /// its queued device work (seed torch.cuda.synchronize()). Errors: a stream's (its fault);
  /// a callable a task queued (TaskScope::enqueue) that threw and was not reported yet, as
  /// that task's TaskError naming its iteration (one per call).
  void synchronize() {
    synchronize_streams();
    core_.runtime().stream("default").synchronize();
    core_.throw_host_work_error();
  }

  /// The period x task table of the plan (seed print_schedule); shortcut tasks are marked
  /// `[skip]`.
  [[nodiscard]] std::string format_schedule(int periods) const {
    return swp::format_schedule(core_.graph(), periods, shortcuts());
  }

  /// The number the next batch admitted will get as its iteration (numbers go on across
  /// runs: see fill_pipeline).
  [[nodiscard]] std::int64_t next_iteration() const noexcept { return core_.next_iteration(); }

  [[nodiscard]] const PlanGraph& graph() const noexcept { return core_.graph(); }
  /// The pipeline's depth: how many iterations it runs at once at most (data-flow: the
  /// `max_depth` it was made with; the clock: its plan's stages, max(stage) + 1). The one name
  /// for it; slots() and DataFlowPipeline::max_depth() are its older names.
  [[nodiscard]] int depth() const noexcept { return static_cast<int>(core_.depth()); }
  [[deprecated("use depth()")]] [[nodiscard]] std::size_t slots() const noexcept {
    return core_.depth();
  }
  /// The order run_one_serial_iter runs tasks in: topological over intra deps, ties by name.
  [[nodiscard]] const std::vector<TaskIndex>& serial_order() const noexcept {
    return core_.serial_order();
  }
  [[nodiscard]] Runtime& runtime() noexcept { return core_.runtime(); }

  /// Sets the deadlines of the run's waits (see EngineTimeouts); between runs. Throws
  /// std::invalid_argument for a check interval that is not positive.
  /// Errors (this and the other between-runs setters: set_observer, enable_nvtx,
  /// set_failure_policy, retire_after_device, the shortcuts, on_run_failed):
  /// PipelineStateError naming the setter while a run is in progress (see
  /// set_failure_policy), while a call drives the pipeline (from on_retire, on_failure, the
  /// source or a body of progress(), run(), next(), drain() or a serial run: "set_timeouts
  /// called while run() of the same pipeline runs ..."), or, for set_observer and
  /// enable_nvtx, while bodies of a broken run still run. A run's threads read what they set.
  void set_timeouts(EngineTimeouts timeouts) { core_.set_timeouts(std::move(timeouts)); }
  /// Attaches `observer` (nullptr: none) to the task instances (see TaskObserver); between
  /// runs (see set_timeouts for the errors).
  void set_observer(TaskObserver* observer) { core_.set_observer(observer); }
  /// The observer set_observer attached (nullptr: none).
  [[nodiscard]] TaskObserver* observer() const noexcept { return core_.observer(); }

  /// Emits an NVTX range for every task instance from now on (off: none), named as in seed 003:
  /// `SWP/{Task}/iter{N}` when pipelined, `SWP_serial/{Task}/iter{N}` in run_one_serial_iter,
  /// `[skip]` appended for a shortcut task. A range spans the instance's body, from its start
  /// on its lane to its finish (its device work submitted), across suspensions. Returns
  /// whether ranges will be emitted: false where NVTX is not compiled in (swp::nvtx_compiled).
  /// Cost: off, one predictable branch per instance; on, the name written into a stack buffer
  /// and nvtxRangeStartA / nvtxRangeEnd (which return at once without a tool attached). Set
  /// it between runs (see set_timeouts for the errors).
  /// Example: `pipe.enable_nvtx(); pipe.run(batches);  // then: nsys profile ...`
  bool enable_nvtx(bool on = true) { return core_.set_nvtx(on); }

 protected:
  // Ends what is in flight (see the class comment). Derived destructors call it first: until
  // it returns, lanes may still run this object's task routines and write its contexts, and
  // the drain calls retire through its FrontEnd vtable.
  void shut_down() noexcept { core_.shut_down(); }

  // A Plan<Ctx>'s bodies; throws std::invalid_argument when they do not fit its tasks.
  Pipeline(Runtime& runtime, const Plan<Ctx>& plan, detail::ReleasePolicy::Make release,
           std::size_t slots)
      : Pipeline(runtime, plan.untyped(), plan.bound_bodies(), release, slots) {}
  // No bodies: synthetic costs.
  Pipeline(Runtime& runtime, const PipelinePlan& plan, detail::ReleasePolicy::Make release,
           std::size_t slots)
      : Pipeline(runtime, plan, std::vector<std::optional<TaskBody<Ctx>>>(plan.tasks.size()),
                 release, slots) {}

 private:
  // One serial iteration of a serial run (Engine::SerialRun), its on_retire included.
  void serial_iteration(Batch batch, std::int64_t iter_idx) {
    core_.await_serial_slot(iter_idx);  // the previous serial iteration's device work
    contexts_[0] = Ctx{};
    contexts_[0].batch = std::move(batch);
    contexts_[0].iter_idx = iter_idx;
    core_.run_serial(iter_idx);
    if (on_retire_) on_retire_(contexts_[0]);
  }

  Pipeline(Runtime& runtime, const PipelinePlan& plan,
           std::vector<std::optional<TaskBody<Ctx>>> bodies, detail::ReleasePolicy::Make release,
           std::size_t slots)
      : bodies_(std::move(bodies)),
        shortcuts_(plan.tasks.size()),
        contexts_(detail::Engine::context_slots(std::max<std::size_t>(slots, 1))),
        feed_(runtime.scheduler()),
        core_(runtime, validate(plan), release, std::max<std::size_t>(slots, 1), *this) {
    const PlanGraph& graph = core_.graph();
    synthetic_.resize(graph.size());
    shortcut_routines_.resize(graph.size());
    for (TaskIndex t = 0; t < graph.size(); ++t)
      if (!bodies_[t] && detail::SyntheticRoutine::needed(graph.cost(t)))
        synthetic_[t] = std::make_unique<detail::SyntheticRoutine>(graph.cost(t));
    update_routines();
  }

  // The routine of task `t`: its body (the plan's, shared), or its synthetic costs, or
  // nullptr (nothing to run).
  [[nodiscard]] const detail::TaskRoutine* routine(TaskIndex t) const noexcept {
    if (bodies_[t]) return &bodies_[t]->call();
    return synthetic_[t].get();
  }

  // What the core runs for each task: its routine, or its shortcut while it is shortcut.
  // Tasks with neither body nor cost nor shortcut have none (the core skips them).
  void update_routines() {
    for (TaskIndex t = 0; t < synthetic_.size(); ++t) {
      if (!shortcuts_.enabled(t)) {
        core_.set_routine(t, routine(t));
        continue;
      }
      if (!shortcut_routines_[t])
        shortcut_routines_[t] = std::make_unique<detail::ShortcutRoutine<Ctx>>(
            shortcuts_, t, routine(t), bodies_[t] ? &bodies_[t]->writes : nullptr,
            core_.graph().task(t).task.io);
      core_.set_routine(t, shortcut_routines_[t].get());
    }
  }

  void set_shortcut(const std::vector<std::string_view>& names, bool on) {
    shortcuts_.set(core_, names, on);
    update_routines();
  }

  // FrontEnd: the core admits batches into the contexts and hands retired ones to the user.
  detail::Admission admit(std::int64_t iter, std::int64_t first_iter, std::size_t slot) override {
    std::optional<Batch> batch;
    const detail::Admission admission = feed_.take(batch);
    if (admission != detail::Admission::admitted) return admission;
    Ctx& ctx = contexts_[slot];
    ctx = Ctx{};
    ctx.batch = std::move(*batch);
    ctx.iter_idx = iter;
    if constexpr (requires { ctx.first_iter; }) ctx.first_iter = first_iter;
    return admission;
  }
  [[nodiscard]] bool source_ready() const noexcept override { return feed_.ready(); }
  [[nodiscard]] bool source_idle() const noexcept override { return feed_.idle(); }
  void end_source() override { feed_.end(); }

  void release(std::size_t slot) noexcept override {
    try {
      contexts_[slot] = Ctx{};
    } catch (...) {
      // Kept as it is: the slot's next admission overwrites it (and reports what that throws).
    }
  }

  void run_ended(const std::exception_ptr& why) override {
    std::exception_ptr thrown;  // what on_failure threw first: rethrown once all are handed
    const auto hand_back = [&](std::optional<Batch> batch) {
      if (!batch || !on_failure_) return;
      try {
        Ctx ctx{};
        ctx.batch = std::move(*batch);
        ctx.iter_idx = -1;  // never admitted: it has no iteration
        on_failure_(ctx, why);
      } catch (...) {
        if (!thrown) thrown = std::current_exception();
      }
    };
    hand_back(feed_.take_fetched());  // received before anything still queued
    if (inbox_ != nullptr) {
      // Closed first: a racing submit is refused (ChannelClosed) instead of
      // landing behind the last look.
      inbox_->close();
      while (auto batch = inbox_->try_receive()) hand_back(std::move(batch));
    }
    if (thrown) std::rethrow_exception(thrown);
  }

  void retire(std::int64_t, std::size_t slot, const std::exception_ptr& error) override {
    retired_slot_ = slot;
    // The common case without a frame of its own (on_retire is its tail call).
    if (!error && !retired_error_) [[likely]] {
      if (on_retire_) on_retire_(contexts_[slot]);
      return;
    }
    retire_failed(slot, error);
  }
  // retire() of an iteration that failed (skip), or the first one after it.
  [[gnu::noinline]] void retire_failed(std::size_t slot, const std::exception_ptr& error) {
    retired_error_ = error;
    if (error) {
      if (on_failure_) on_failure_(contexts_[slot], error);
    } else if (on_retire_) {
      on_retire_(contexts_[slot]);
    }
  }

  std::optional<Retired<Ctx>> retired(std::optional<std::int64_t> iter) const {
    if (!iter) return std::nullopt;
    // The core returns the iteration it handed to retire() last.
    return Retired<Ctx>(core_.core(), contexts_[retired_slot_], *iter, retired_slot_,
                        retired_error_);
  }

  void* context(std::size_t slot) noexcept override { return &contexts_[slot]; }

  std::unique_ptr<detail::OutputBox> make_output(TaskIndex task) override {
    return bodies_[task] ? bodies_[task]->call().make_output() : nullptr;
  }

  void synchronize_streams() {
    for (TaskIndex t = 0; t < core_.graph().size(); ++t) core_.stream_of(t).synchronize();
  }

  Channel<Batch>& inbox() {
    if (!inbox_) throw PipelineStateError("submit() before fill_submissions()");
    return *inbox_;
  }

  std::vector<std::optional<TaskBody<Ctx>>> bodies_;
  detail::ShortcutState<Ctx> shortcuts_;
  std::vector<Ctx> contexts_;
  // Per task: the routine of its synthetic costs (a task without a body that has any), and
  // its shortcut once it was shortcut. A body is its own routine (see routine()).
  std::vector<std::unique_ptr<detail::SyntheticRoutine>> synthetic_;
  std::vector<std::unique_ptr<detail::ShortcutRoutine<Ctx>>> shortcut_routines_;
  std::unique_ptr<Channel<Batch>> inbox_;  // submit()'s channel (fill_submissions)
  detail::Feed<Batch> feed_;
  std::function<void(const Ctx&)> on_retire_;
  std::function<void(const Ctx&, const std::exception_ptr&)> on_failure_;
  std::exception_ptr retired_error_;  // why the iteration retired last failed (skip), if it did
  std::size_t retired_slot_ = 0;      // the context slot of the iteration retired last
  detail::Engine core_;  // last: destroyed (drained) first, while bodies and contexts live
};

}  // namespace swp
