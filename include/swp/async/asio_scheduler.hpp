#pragma once
// AsioScheduler: lanes as handlers on a caller's Asio executor (DESIGN.md decision 5).

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include <boost/asio/any_io_executor.hpp>

#include "swp/async/scheduler.hpp"

namespace swp {

/// Runs lanes on an Asio executor the caller owns, so a pipeline lives inside an Asio service:
/// every lane step is a handler posted to `executor` (lanes stay FIFO and serial themselves,
/// so they behave as strands), and the threads running the io_context run the tasks.
///
/// Completion: a Runnable runs as a handler on the executor, soon after `post`. Waiting:
/// `drive_until` (what a pipeline's blocking progress() uses) waits on a condition variable
/// for a thread outside the executor. On a thread that is running the executor's io_context
/// a pipeline refuses a blocking progress() or drain() that would wait (PipelineStateError:
/// it would stall the handlers it waits for); use the non-blocking forms there:
/// `co_await pipe.next()`, `swp::async_progress(pipe, token)` (swp/engine/asio.hpp). Only a
/// pipeline's destructor, draining as a last resort, runs that context's handlers meanwhile
/// — except from inside the executor's strand, whose handlers cannot run until the calling
/// one returns: there `drive_until` returns at once. The io threads are recognised for an
/// io_context's executor (any of its blocking, relationship and outstanding_work
/// properties, default allocator) and a strand of one (`make_strand(io)`); for any other
/// executor type every thread counts as outside it.
/// Errors: `drive_until` on a thread of the io_context throws std::logic_error once that
/// context is stopped and the wait is still unfinished (its handlers, the lanes' steps among
/// them, cannot run there any more: it would only spin to the deadline); a pipeline destroyed
/// there unfinished ends the process (its destructor cannot report). With
/// `time_point::min()` it just returns `done()`. Cancellation: stop the io_context only after
/// the pipelines on it are drained; queued lane steps then never run.
///
/// Destruction (with its Runtime, after the pipelines): waits until no io thread runs one of
/// its runnables any more — a lane step that finished an iteration still returns through its
/// lane and this scheduler after the pipeline saw the iteration complete — and runnables
/// posted before and run after it are skipped. So a runtime may go while other io threads
/// still run the context; never from inside one of its own lane steps (that waits forever).
///
/// Example:
/// ```
/// boost::asio::io_context io;
/// swp::Runtime rt(std::make_unique<swp::AsioScheduler>(io.get_executor()));
/// swp::DataFlowPipeline<Ctx> pipe(rt, plan);
/// pipe.fill_pipeline(loader);
/// swp::async_progress(pipe, [](std::exception_ptr e, std::optional<std::int64_t> iter) { ... });
/// io.run();
/// ```
class AsioScheduler final : public Scheduler {
 public:
  explicit AsioScheduler(boost::asio::any_io_executor executor);
  /// Waits until no runnable of this scheduler runs on any thread (see the class comment).
  ~AsioScheduler() override;
  AsioScheduler(const AsioScheduler&) = delete;
  AsioScheduler& operator=(const AsioScheduler&) = delete;

  void post(Runnable& r) noexcept override;
  bool drive_until(const std::function<bool()>& done, Clock::time_point deadline) override;
  [[nodiscard]] Clock::time_point now() const override { return Clock::now(); }
  /// True on a thread running the executor's io_context (see the class comment for the
  /// executor types recognised).
  [[nodiscard]] bool must_not_block_here() const noexcept override;

  [[nodiscard]] const boost::asio::any_io_executor& executor() const noexcept { return executor_; }

 protected:
  void wake_drivers() noexcept override;

 private:
  // Shared by the scheduler and its posted handlers: whether the scheduler is still there,
  // and how many handlers run one of its runnables now.
  struct Gate;

  std::shared_ptr<Gate> gate_;
  boost::asio::any_io_executor executor_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<int> drivers_{0};  // threads blocked in drive_until
};

}  // namespace swp
