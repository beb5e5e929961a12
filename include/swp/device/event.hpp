#pragma once
// Event: a recorded point in a host or simulated stream (the stand-in for a cudaEvent).

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "swp/async/detail/spin_lock.hpp"
#include "swp/async/device_event.hpp"
#include "swp/async/scheduler.hpp"

namespace swp {

/// Something blocked on an event: a stream's wait item. Called once the awaited generation
/// completed, on the thread that completed it.
class EventWaiter {
 public:
  virtual void event_completed() noexcept = 0;

 protected:
  ~EventWaiter() = default;
};

/// A reusable event. Each `Stream::record` arms a new *generation*; the stream completes that
/// generation when its earlier work is done. A wait captures the generation it was asked for,
/// so re-recording the event for a later iteration never confuses an earlier waiter.
///
/// Completion: `query()` is true once the latest armed generation completed.
/// Thread safety: arm on the recording CPU thread, complete on the stream, query and wait from
/// anywhere.
class Event final : public DeviceEvent {
 public:
  Event() = default;

  [[nodiscard]] bool query() const noexcept override {
    return completed_.load(std::memory_order_acquire) >= armed_.load(std::memory_order_acquire);
  }

  /// The generation the next wait should wait for (the latest armed one).
  [[nodiscard]] std::uint64_t armed_generation() const noexcept {
    return armed_.load(std::memory_order_acquire);
  }
  [[nodiscard]] bool reached(std::uint64_t generation) const noexcept {
    return completed_.load(std::memory_order_acquire) >= generation;
  }

  /// Ideal completion time of `generation` (the emulated device clock), if still remembered.
  [[nodiscard]] Clock::time_point completed_at(std::uint64_t generation) const noexcept;

  /// Registers `w` to be told when `generation` completes; false when it already has.
  bool add_waiter(std::uint64_t generation, EventWaiter& w);

  /// Forgets `w` (a waiter giving up, e.g. a stream shutting down).
  void remove_waiter(EventWaiter& w);

  /// Starts a new generation recorded on `stream` and returns it. Called by Stream::record.
  std::uint64_t arm(const void* stream) noexcept {
    stream_.store(stream, std::memory_order_relaxed);
    return armed_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }

  /// The stream that recorded the latest generation (identity only).
  [[nodiscard]] const void* recorded_on() const noexcept {
    return stream_.load(std::memory_order_relaxed);
  }

  /// Completes `generation` at emulated time `when` and tells its waiters. Called by streams.
  void complete(std::uint64_t generation, Clock::time_point when) noexcept;

 private:
  struct Waiting {
    std::uint64_t generation;
    EventWaiter* waiter;
  };
  static constexpr std::size_t remembered = 8;

  std::atomic<const void*> stream_{nullptr};
  std::atomic<std::uint64_t> armed_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::array<std::atomic<Clock::rep>, remembered> when_{};
  detail::SpinLock lock_;
  std::vector<Waiting> waiters_;
};

}  // namespace swp
