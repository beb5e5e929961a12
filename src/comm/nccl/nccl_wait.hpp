#pragma once
// How the NCCL communicator waits without a thread blocked inside NCCL or CUDA, so that every
// wait has a deadline: a polling back-off, settling a non-blocking communicator's state, and
// giving up on an init or split some rank never joins (libswp-nccl's private header). The
// query and the abort are parameters, so that tests inject NCCL's answers without a GPU.

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "swp/comm/communicator.hpp"

namespace swp::detail {

using NcclClock = std::chrono::steady_clock;

/// Pauses between polls: 64 yields (a result due within microseconds is seen at once), then
/// sleeps doubling from 1 µs up to `cap` (a long wait costs little CPU). reset() after
/// progress starts over.
class Backoff {
 public:
  explicit Backoff(std::chrono::microseconds cap = std::chrono::microseconds(1000)) noexcept
      : cap_(cap) {}
  void pause() {
    if (polls_ < 64) {
      ++polls_;
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, cap_);
  }
  void reset() noexcept {
    polls_ = 0;
    sleep_ = std::chrono::microseconds(1);
  }

 private:
  std::chrono::microseconds cap_;
  std::chrono::microseconds sleep_{1};
  int polls_ = 0;
};

/// Polls `query` (ncclResult_t(ncclResult_t* state): ncclCommGetAsyncError on the
/// communicator) until the state is no longer ncclInProgress or `deadline` passed. A
/// non-blocking communicator's init, split and operations return before NCCL is done with
/// them: an operation is on its stream only once the state left ncclInProgress. Returns the
/// state (ncclInProgress: the deadline passed), or the query's own error.
template <class Query>
ncclResult_t settle(Query&& query, NcclClock::time_point deadline) {
  Backoff backoff;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (const ncclResult_t rc = query(&state); rc != ncclSuccess) return rc;
    if (state != ncclInProgress || NcclClock::now() >= deadline) return state;
    backoff.pause();
  }
}

/// Waits for a new non-blocking communicator of rank `rank`, made by `call` ("ncclCommSplit"),
/// to be ready by `deadline` (`query` as for settle). Otherwise calls `abort` (ncclCommAbort:
/// NCCL's only way out of an init some rank never joins) and throws CommTimeout — "rank R:
/// CALL did not complete in T ms: WHY_LATE; the communicator was aborted" — or, when NCCL
/// failed, CommError with NCCL's error string; both name the rank and `op` ("init", "split").
template <class Query, class Abort>
void await_ready(Query&& query, Abort&& abort, int rank, const char* op, const std::string& call,
                 std::chrono::milliseconds timeout, NcclClock::time_point deadline,
                 const std::string& why_late) {
  const ncclResult_t state = settle(query, deadline);
  if (state == ncclSuccess) return;
  abort();
  const std::string who = "rank " + std::to_string(rank) + ": ";
  if (state == ncclInProgress)
    throw CommTimeout(rank, op,
                      who + call + " did not complete in " + std::to_string(timeout.count()) +
                          " ms: " + why_late + "; the communicator was aborted");
  throw CommError(rank, op, who + call + " failed: " + ncclGetErrorString(state));
}

/// Settles an operation just enqueued on a non-blocking communicator (`query` as for settle):
/// returns once NCCL put it on its stream. Throws CommTimeout — "DESCRIPTION was not enqueued
/// in T ms: NCCL kept it in progress (a rank did not take part)" — when it stayed in progress
/// until `timeout` passed (the caller then aborts the communicator), CommError when NCCL
/// failed; both name `rank` and `op`.
template <class Query>
void settle_enqueued(Query&& query, int rank, const std::string& op, const std::string& description,
                     std::chrono::milliseconds timeout) {
  const ncclResult_t state = settle(query, NcclClock::now() + timeout);
  if (state == ncclSuccess) return;
  if (state == ncclInProgress)
    throw CommTimeout(rank, op,
                      description + " was not enqueued in " + std::to_string(timeout.count()) +
                          " ms: NCCL kept it in progress (a rank did not take part)");
  throw CommError(rank, op, description + ": enqueueing it failed: " + ncclGetErrorString(state));
}

}  // namespace swp::detail
