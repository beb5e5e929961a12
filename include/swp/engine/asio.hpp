#pragma once
// The Asio completion-token forms of progress() and submit(): swp::async_progress(pipe,
// token), swp::async_submit(pipe, batch, token).
//
// The only engine header that includes Asio: `swp/swp.hpp` and the rest of the engine stay
// free of it. Include this header (or `swp/asio.hpp`, which adds AsioScheduler) to use it.

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/system_executor.hpp>

#include "swp/async/asio_scheduler.hpp"
#include "swp/async/co.hpp"
#include "swp/engine/pipeline.hpp"

namespace swp {

namespace detail {

// One async_progress step: next()'s wait, then the handler posted to its executor. The work
// guards keep the handler's executor and the lanes' io_context busy until the handler ran.
template <class Ctx, class Handler>
Co<void> async_progress_op(Pipeline<Ctx>& pipe, Handler handler) {
  // Lanes on an io_context: its run() must not return while this step waits on it, and the
  // handler goes there unless it names its own executor.
  auto* asio = dynamic_cast<AsioScheduler*>(&pipe.runtime().scheduler());
  const boost::asio::any_io_executor fallback =
      asio != nullptr ? asio->executor()
                      : boost::asio::any_io_executor(boost::asio::system_executor());
  const boost::asio::any_io_executor runtime_work =
      boost::asio::prefer(fallback, boost::asio::execution::outstanding_work.tracked);
  auto executor = boost::asio::get_associated_executor(handler, fallback);
  auto work = boost::asio::make_work_guard(executor);
  // Per-operation cancellation ends this wait, never the run, whatever its type: ending the
  // wait has no side effect at all (nothing retired, the run goes on), which is what a
  // partial request asks for and more than a total or terminal one needs. Ending the run
  // instead would break `async_progress(...) || timer.async_wait(...)`: Asio's awaitable
  // frames let only terminal cancellation through to the operations they await (the default
  // cancellation_state filter), so that idiom delivers terminal. The run ends with
  // pipe.cancel(). The signal lives in this frame, which outlives the slot's handler
  // (cleared below before the frame ends).
  StopSignal abandon;
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  if (slot.is_connected()) {
    slot.assign([&abandon](boost::asio::cancellation_type type) {
      if (type != boost::asio::cancellation_type::none)
        abandon.request_stop("async_progress cancelled: the wait ends, the run goes on");
    });
  }
  std::exception_ptr error;
  std::optional<Retired<Ctx>> iter;
  try {
    iter = co_await pipe.next(abandon);
  } catch (...) {
    error = std::current_exception();
  }
  if (slot.is_connected()) slot.clear();
  boost::asio::post(executor, [handler = std::move(handler), error, iter]() mutable {
    std::move(handler)(error, iter);
  });
}

// One async_submit: the submit's wait, then the handler posted to its executor. `stop` (kept
// alive by the frame) is what the cancellation slot fires.
template <class Ctx, class Handler>
Co<void> async_submit_op(Pipeline<Ctx>& pipe, typename Ctx::batch_type batch, Handler handler,
                         std::shared_ptr<StopSignal> stop) {
  auto* asio = dynamic_cast<AsioScheduler*>(&pipe.runtime().scheduler());
  const boost::asio::any_io_executor fallback =
      asio != nullptr ? asio->executor()
                      : boost::asio::any_io_executor(boost::asio::system_executor());
  auto executor = boost::asio::get_associated_executor(handler, fallback);
  auto work = boost::asio::make_work_guard(executor);
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  if (slot.is_connected()) {
    slot.assign([stop](boost::asio::cancellation_type type) {
      if ((type & (boost::asio::cancellation_type::terminal | boost::asio::cancellation_type::partial |
                   boost::asio::cancellation_type::total)) != boost::asio::cancellation_type::none)
        stop->request_stop("async_submit cancelled");
    });
  }
  std::exception_ptr error;
  try {
    co_await pipe.submit(std::move(batch));
  } catch (...) {
    error = std::current_exception();
  }
  if (slot.is_connected()) slot.clear();
  boost::asio::post(executor, [handler = std::move(handler), error]() mutable {
    std::move(handler)(error);
  });
}

}  // namespace detail

/// The Asio form of `pipe.submit(batch)` (the push form, see Pipeline::fill_submissions), for
/// any completion token: a handler `void(std::exception_ptr)`, `asio::use_awaitable`, ...
///
/// Completion: once the batch is queued for the run (at once when fewer than the capacity
/// wait; otherwise when the pipeline admitted enough to make room: back-pressure). The
/// handler is posted to its associated executor (default: the AsioScheduler's executor when
/// the lanes run on one, else the system executor), never invoked inline.
/// Errors: swp::ChannelClosed after close_submissions(), PipelineStateError before
/// fill_submissions(), as the exception_ptr.
/// Cancellation: the handler's cancellation slot (terminal, partial, total) ends the wait with
/// swp::Cancelled("async_submit cancelled") — only this operation ends, not the run.
/// The operation owns the batch (it outlives this call): one that was not queued (an error,
/// a cancellation) is not in the pipeline and is destroyed with the operation, not given
/// back. Where a refused batch must survive, submit from a coroutine with
/// `co_await pipe.submit(batch)` (an lvalue: left with the caller when refused).
///
/// Example:
/// ```
/// co_await swp::async_submit(pipe, request, boost::asio::use_awaitable);
/// ```
template <class Ctx, class CompletionToken>
auto async_submit(Pipeline<Ctx>& pipe, typename Ctx::batch_type batch, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr)>(
      [&pipe](auto handler, typename Ctx::batch_type b) {
        auto stop = std::make_shared<StopSignal>();
        const StopSignal* signal = stop.get();
        detail::async_submit_op(pipe, std::move(b), std::move(handler), std::move(stop))
            .start_detached(nullptr, [](void*, std::exception_ptr&) noexcept {}, nullptr,
                            signal);
      },
      token, std::move(batch));
}

/// The Asio form of `pipe.progress()`, for any completion token: a handler with the signature
/// `void(std::exception_ptr, std::optional<swp::Retired<Ctx>>)` (its number is `r->iter()`),
/// `asio::use_awaitable`, `asio::use_future`, `asio::deferred`... It is a free function, as
/// Asio's own operations on I/O objects are (`asio::async_read(stream, buffers, token)`): a
/// member of Pipeline would put Asio into every user of the engines, and one declared only
/// where this header is included would give Pipeline two definitions (an ODR violation).
///
/// Completion: once `co_await pipe.next()` would complete — the oldest in-flight iteration
/// retired and the slot it frees may take the next batch — with the retired iteration
/// (swp::Retired: number, context, values; valid until the next step), or an empty optional
/// at end of data. The handler is posted to its associated
/// executor (default: the AsioScheduler's executor when the lanes run on one, else the system
/// executor), never invoked inline. Both count as having work while the step is pending, so
/// `io_context::run()` does not return meanwhile. Lanes must keep running meanwhile (the
/// runtime's workers, or the io_context's threads).
/// Errors: as progress(), delivered as the exception_ptr (TaskError, PipelineTimeout,
/// PipelineStateError); the pipeline can be filled again afterwards.
/// Cancellation: the handler's associated cancellation slot (`asio::bind_cancellation_slot`,
/// the `||` of awaitable operators, a parallel_group's wait_for_one) ends **this wait**, for
/// every cancellation type: the step completes at once with swp::Cancelled("async_progress
/// cancelled: the wait ends, the run goes on"), having retired nothing, and the run goes on
/// (lanes keep running); the next async_progress continues it, and every iteration still
/// retires in order exactly once. Ending the wait leaves no side effect — the guarantee a
/// partial request asks for, which also satisfies total and terminal ones (through an
/// awaitable's frame Asio passes only terminal cancellation to the operations it awaits, so
/// `async_progress(...) || timer.async_wait(...)` sends terminal). An iteration that retired
/// before the request is still delivered (in `||` it then goes with the losing branch: read
/// every result from on_retire where a wait may be abandoned). To end the run, call
/// `pipe.cancel(reason)` (any thread, an Asio handler too): the step in progress then
/// completes with that swp::Cancelled once the run drained.
/// The slot is cleared before the handler is posted; emit from the thread (or strand) that
/// started the operation. A failing or timed-out run completes it with that error.
/// One progress()/next()/async_progress() at a time; keep the pipeline alive until the
/// handler ran.
///
/// Example:
/// ```
/// #include <swp/engine/asio.hpp>
/// swp::async_progress(pipe, [&](std::exception_ptr error, std::optional<swp::Retired<Ctx>> r) {
///   if (!error && r) answer(r->context().batch, r->context().result);
/// });
/// auto iter = co_await swp::async_progress(pipe, boost::asio::use_awaitable);
/// ```
template <class Ctx, class CompletionToken>
auto async_progress(Pipeline<Ctx>& pipe, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken,
                                     void(std::exception_ptr, std::optional<Retired<Ctx>>)>(
      [&pipe](auto handler) {
        detail::async_progress_op(pipe, std::move(handler))
            .start_detached(nullptr, [](void*, std::exception_ptr&) noexcept {}, nullptr);
      },
      token);
}

}  // namespace swp
