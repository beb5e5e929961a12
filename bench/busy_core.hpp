#pragma once
// A co-runner for measuring beside a busy core: `swp-bench dispatch --co-runner`.

#include <sys/types.h>

namespace swp_bench {

/// A separate process, forked at construction and killed at destruction, that spins on one
/// core: pinned to the last core this process may run on (when the affinity call succeeds),
/// at the same priority, doing real work (a counter the compiler must keep updating), so that
/// one core is shared with whatever is measured meanwhile — as on a CI runner or a training
/// host whose loader threads keep a core busy. A process and not a thread of ours: the
/// scheduler treats it as another program, and nothing of ours (allocations, signals, the
/// measured systems' thread counts) sees it. It dies with this process (PR_SET_PDEATHSIG).
/// Throws std::system_error when fork fails.
class BusyCore {
 public:
  BusyCore();
  ~BusyCore();
  BusyCore(const BusyCore&) = delete;
  BusyCore& operator=(const BusyCore&) = delete;

  /// The core the co-runner was pinned to, or -1 when pinning failed (it then floats).
  [[nodiscard]] int core() const noexcept { return core_; }

 private:
  pid_t pid_ = -1;
  int core_ = -1;
};

}  // namespace swp_bench
