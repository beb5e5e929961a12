#pragma once
// sync_wait: runs a Co to completion from ordinary code (tests, main()).

#include <exception>
#include <semaphore>
#include <utility>

#include "swp/async/co.hpp"

namespace swp {

/// Starts `co` on the calling thread and blocks until it finishes; returns its value or
/// rethrows its exception. Continuations without a Resumer run on whatever thread completes
/// what they await, so `sync_wait` works for code that awaits futures completed elsewhere.
///
/// Example: `int x = swp::sync_wait(answer());`
template <class T>
T sync_wait(Co<T> co) {
  std::binary_semaphore finished{0};
  co.start(
      nullptr,
      [](void* context, std::exception_ptr&) noexcept {
        static_cast<std::binary_semaphore*>(context)->release();
      },
      &finished);
  finished.acquire();
  return co.result();
}

}  // namespace swp
