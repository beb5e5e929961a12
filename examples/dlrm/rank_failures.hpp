#pragma once
// The first failure of stream work on this rank, named with the rank, task and iteration, and
// the abort that stops the peers. No torch here.

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "swp/comm/communicator.hpp"

namespace dlrm {

/// What the trainer's stream work failed with on this rank (see record). Any thread.
class RankFailures {
 public:
  RankFailures(int rank, swp::Communicator& world) : rank_(rank), world_(world) {}

  [[nodiscard]] bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

  /// Records `error`, which stream work of `task` in iteration `iter` threw: the first one
  /// (not our own abort: the body's error that caused it is what the run reports) is kept
  /// and aborts the communicator, so that the peers stop within a second. A peer's failure
  /// that reached us is kept as "rank R: stopped in task ... because <the peer's reason>".
  void record(const std::string& task, std::int64_t iter, const std::exception_ptr& error);

  /// Throws the first failure recorded, if any (not for our own abort: the task body's
  /// error that caused it is reported instead).
  void throw_if_failed() const;

 private:
  int rank_;
  swp::Communicator& world_;
  mutable std::mutex mutex_;
  std::atomic<bool> failed_{false};
  std::string first_;
};

}  // namespace dlrm
