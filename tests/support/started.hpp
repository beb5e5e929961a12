#pragma once
// Started: runs a Co<void> as a root without blocking and records how it ended.

#include <exception>
#include <string>
#include <utility>

#include "swp/async/cancelled.hpp"
#include "swp/async/co.hpp"

namespace swp::test {

/// Starts `co` at once on this thread (no Resumer: whatever completes what it awaits resumes
/// it inline), optionally under a stop signal.
struct Started {
  Co<void> co;
  bool finished = false;
  std::exception_ptr error;

  explicit Started(Co<void> c, const StopSignal* stop = nullptr) : co(std::move(c)) {
    co.start(
        nullptr,
        [](void* context, std::exception_ptr& e) noexcept {
          auto* self = static_cast<Started*>(context);
          self->finished = true;
          self->error = e;
        },
        this, stop);
  }
  Started(const Started&) = delete;
  Started& operator=(const Started&) = delete;

  /// The reason of the Cancelled it ended with, or "" when it ended otherwise.
  [[nodiscard]] std::string cancelled_reason() const {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const Cancelled& c) {
      return c.what();
    } catch (...) {
    }
    return "";
  }
};

}  // namespace swp::test
