#pragma once
// AsioRuntime: a Runtime whose lanes run on a caller's Asio executor.

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <utility>

#include "swp/async/asio_scheduler.hpp"
#include "swp/engine/runtime.hpp"

namespace swp {

/// A Runtime on the caller's executor (any `boost::asio::any_io_executor`: an io_context's, a
/// strand's, a thread_pool's) instead of threads of its own: every lane step is a handler
/// posted there (see AsioScheduler), so a pipeline lives inside an Asio service and its tasks
/// run on the service's threads. The device is `options.backend`'s (host or cuda; not sim,
/// which needs its own virtual-time scheduler: std::invalid_argument); `options.workers` is
/// unused.
///
/// Completion and waiting: drive pipelines with the non-blocking forms on the executor's
/// threads — `co_await pipe.next()`, `swp::async_progress(pipe, token)` — which never hold a
/// thread; a blocking progress()/drain() that would wait is refused there with
/// PipelineStateError (it would stall the handlers it waits for), and works from any other
/// thread. Cancellation: `pipe.cancel(reason)`, or the completion handler's cancellation slot
/// (swp/engine/asio.hpp). Stop the io_context only after the pipelines on it ended (their
/// queued lane steps would never run); destroy the pipelines before the runtime. The runtime
/// may go while the executor's threads still run: a lane step that finished an iteration
/// still returns through its lane and the scheduler right after the pipeline saw the iteration
/// complete, so the destructor waits until no thread runs one of its lane steps, and steps
/// queued before it and run after it are skipped (AsioScheduler). Never destroy it from inside
/// one of its own lane steps (a task body): that wait would never end.
///
/// Example:
/// ```
/// boost::asio::io_context io;
/// swp::AsioRuntime rt(io.get_executor());
/// swp::DataFlowPipeline<Ctx> pipe(rt, plan);
/// pipe.fill_submissions(64);
/// swp::async_progress(pipe, on_step);  // on_step answers and calls async_progress again
/// io.run();
/// ```
class AsioRuntime final : public Runtime {
 public:
  explicit AsioRuntime(boost::asio::any_io_executor executor, RuntimeOptions options = {})
      : Runtime(std::make_unique<AsioScheduler>(std::move(executor)), std::move(options)) {}

  /// The executor the lanes run on.
  [[nodiscard]] const boost::asio::any_io_executor& executor() noexcept {
    return static_cast<AsioScheduler&>(scheduler()).executor();
  }
};

}  // namespace swp
