#pragma once
// drive_to_end: runs an erased coroutine to its end on the calling thread, driving its
// scheduler while it awaits (for tests of ErasedCo; the engines' serial iterations run their
// bodies with deadlines and cancellation of their own, SerialSteps::drive_body).

#include <atomic>
#include <exception>
#include <optional>
#include <utility>

#include "swp/async/co.hpp"
#include "swp/async/detail/erased_co.hpp"
#include "swp/async/scheduler.hpp"

namespace swp::test {

/// Starts `body` (not started yet) on this thread and returns once it ended: its error, or
/// nullptr when it succeeded. While it awaits, this thread drives `scheduler` (drive_until):
/// on virtual time that is what runs the body on; on the host its awaits may complete on other
/// threads, which resume it there and notify this one.
/// Returns std::nullopt when it can never end: the scheduler has nothing left to run while the
/// body still waits (a deadlock, known on virtual time). `body` stays suspended then.
/// `environment`: the CoEnvironment its awaits see (the engine's instance).
///
/// Example: `if (auto error = drive_to_end(body, sched, nullptr); error && *error) ...`
inline std::optional<std::exception_ptr> drive_to_end(detail::ErasedCo& body, Scheduler& scheduler,
                                                      CoEnvironment* environment = nullptr) {
  // Written by whichever thread ends the body: atomically, and followed by a notify, so the
  // driving thread neither races with it nor sleeps through it.
  struct Outcome {
    std::atomic<bool> ended{false};
    std::exception_ptr error;
    Scheduler* scheduler = nullptr;
  } outcome;
  outcome.scheduler = &scheduler;
  body.start(
      nullptr,
      [](void* context, std::exception_ptr& error) noexcept {
        auto* o = static_cast<Outcome*>(context);
        o->error = std::move(error);
        Scheduler* to_notify = o->scheduler;  // `o` may be gone once `ended` is seen
        o->ended.store(true, std::memory_order_seq_cst);
        to_notify->notify();
      },
      &outcome, nullptr, environment);
  const auto ended = [&] { return outcome.ended.load(std::memory_order_seq_cst); };
  if (!ended()) scheduler.drive_until(ended, Clock::time_point::max());
  if (!ended()) return std::nullopt;
  return std::move(outcome.error);
}

}  // namespace swp::test
