#pragma once
// A CPU hog for measuring under load: `swp-bench dispatch --busy-core`.

#include <atomic>
#include <thread>

namespace swp_bench {

/// Spins a thread on a std::atomic flag from construction to destruction, pinned to the last
/// core the process may run on (when the affinity call succeeds), so one core is taken away
/// from whatever is measured meanwhile, as on a machine busy with other work.
class BusyCore {
 public:
  BusyCore();
  ~BusyCore();
  BusyCore(const BusyCore&) = delete;
  BusyCore& operator=(const BusyCore&) = delete;

  /// The core the hog was pinned to, or -1 when pinning failed (it then floats).
  [[nodiscard]] int core() const noexcept { return core_; }

 private:
  // Relaxed is enough: the flag carries no data, and the spinning thread only needs to see
  // the store eventually; the join in the destructor orders everything else.
  std::atomic<bool> stop_{false};
  std::thread thread_;
  int core_ = -1;
};

}  // namespace swp_bench
