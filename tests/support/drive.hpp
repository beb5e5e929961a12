#pragma once
// How a test retires a pipeline's iterations.

#include <cstdint>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/engine/pipeline.hpp"

namespace swp::test {

/// The blocking progress(), the coroutine next(), async_progress handlers on an io_context
/// whose threads also run the lanes, or run(source), which retires them all in one call
/// (iterations seen by on_retire).
enum class Drive { progress, next, asio, run };

/// Retires every iteration with co_await next(); returns them in order.
template <class Ctx>
Co<std::vector<std::int64_t>> next_all(Pipeline<Ctx>& pipe) {
  std::vector<std::int64_t> retired;
  while (auto i = co_await pipe.next()) retired.push_back(i->iter());
  co_return retired;
}

}  // namespace swp::test
