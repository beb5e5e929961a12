#pragma once
// StopScope: what a stop request given to one wait for a pipeline (next(token, scope),
// swp::async_progress's cancellation slot) ends.

#include <cstdint>

namespace swp {

/// What stopping a wait for the next retired iteration ends.
///
/// Example:
/// ```
/// // Give up waiting after a second, keep the run: the next call picks up where this was.
/// auto r = co_await pipe.next(deadline_token, swp::StopScope::wait);
/// ```
enum class StopScope : std::uint8_t {
  /// The whole run, as `pipe.cancel(reason)`: everything in flight is cancelled and drains,
  /// and the wait throws swp::Cancelled("pipeline cancelled: ...") once it did.
  run,
  /// Only this wait: it throws swp::Cancelled at once, having retired nothing, while the run
  /// goes on; the next progress()/next()/async_progress() continues it (every iteration
  /// still retires, in order, exactly once).
  wait,
};

}  // namespace swp
