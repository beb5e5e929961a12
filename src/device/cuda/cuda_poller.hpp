#pragma once
// CudaPoller: GPU completion found by polling CUDA events from one thread of the device's own
// (the CudaCompletion::polling mode; private to src/device/cuda).

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace swp {
class CudaStream;
}

namespace swp::detail {

/// Polls the streams of one device in polling mode: each pass lets every stream run the
/// items whose CUDA events completed (CudaStream::poll, in stream order). While some stream
/// still waits for the GPU, passes repeat with a bounded back-off (a few yields, then sleeps
/// doubling from 1 µs to 64 µs; reset whenever a pass completed something); with nothing
/// pending the thread parks until a stream queues an item (nudge). It runs no user code of
/// its own: completions only signal (swp::Event's waiters post to their schedulers), and
/// callables queued with Stream::enqueue run on it, as they would on CUDA's callback thread.
class CudaPoller {
 public:
  /// How eagerly it looks while something is pending: `polling` (CudaCompletion::polling:
  /// the back-off above), or `fault_watch` (CudaCompletion::host_function, where host
  /// functions complete the items: a look every 100 ms while host functions are pending, for
  /// a device fault that keeps them from ever running).
  enum class Pace { polling, fault_watch };
  /// `bind` runs first on the poller's thread: it makes the device's GPU current there
  /// (cudaSetDevice), so that its event queries and anything it creates never touch GPU 0.
  explicit CudaPoller(Pace pace = Pace::polling, std::function<void()> bind = {});
  ~CudaPoller();  // stops and joins the thread; every stream was removed before
  CudaPoller(const CudaPoller&) = delete;
  CudaPoller& operator=(const CudaPoller&) = delete;

  /// `stream` takes part in the passes from now on.
  void add(CudaStream& stream);
  /// `stream` takes part no more: no pass touches it once this returns (it waits for the pass
  /// under way). Not from the poller's own thread.
  void remove(CudaStream& stream);
  /// A stream queued an item: wakes the thread if it parked. Any thread, lock-free when the
  /// thread is polling.
  void nudge() noexcept;

 private:
  void loop();

  Pace pace_;
  std::function<void()> bind_;
  std::mutex mutex_;  // streams_, stop_; held during a pass
  std::condition_variable wake_;
  std::vector<CudaStream*> streams_;
  bool stop_ = false;
  std::atomic<std::uint64_t> work_{0};  // nudges so far
  std::atomic<bool> parked_{false};     // the thread waits on wake_ (or is about to)
  std::thread thread_;                  // last: started once the fields above exist
};

}  // namespace swp::detail
