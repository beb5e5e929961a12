#pragma once
// Resumer: where a suspended coroutine continues once what it awaited is ready.

#include <coroutine>

namespace swp {

/// The execution context a coroutine belongs to (a lane, a strand, a test loop). Every awaitable
/// in swp resumes its waiter through the waiter's Resumer instead of on whatever thread
/// completed the awaited operation, so a lane's task never runs outside its lane.
/// A coroutine without a Resumer (e.g. under `sync_wait`) is resumed inline by the completer.
class Resumer {
 public:
  /// Schedules `h` to continue in this context. Called from any thread; must not throw.
  virtual void resume(std::coroutine_handle<> h) noexcept = 0;

 protected:
  ~Resumer() = default;
};

/// Resumes `h` through `resumer`, or inline when there is none.
inline void resume_on(Resumer* resumer, std::coroutine_handle<> h) noexcept {
  if (resumer != nullptr) {
    resumer->resume(h);
  } else {
    h.resume();
  }
}

}  // namespace swp
