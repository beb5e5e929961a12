#pragma once
// Event: a recorded point in a host or simulated stream (the stand-in for a cudaEvent).

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "swp/async/detail/spin_lock.hpp"
#include "swp/async/device_event.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/device/native_event.hpp"

namespace swp {

/// Something blocked on an event: a stream's wait item. Called once the awaited generation
/// completed, on a thread that completed the event (see Event::complete). Must be cheap and
/// must not block: it only signals (a condition variable, a scheduler post).
class EventWaiter {
 public:
  virtual void event_completed() noexcept = 0;

 protected:
  ~EventWaiter() = default;
};

/// One registration of an EventWaiter with an Event, for one generation: the node of the
/// event's intrusive waiter list. It lives with its waiter (a stream keeps one for the wait it
/// is in), so registering, completing and removing never allocate. A node is in at most one
/// event's list at a time; after `Event::remove_waiter(node)` returned it may be registered
/// again or destroyed.
class EventWait {
 public:
  explicit EventWait(EventWaiter& waiter) noexcept : waiter_(&waiter) {}
  EventWait(const EventWait&) = delete;
  EventWait& operator=(const EventWait&) = delete;

 private:
  friend class Event;
  EventWaiter* waiter_;
  std::uint64_t generation_ = 0;
  EventWait* prev_ = nullptr;
  EventWait* next_ = nullptr;
  bool linked_ = false;  // in the list of the event it was registered with (under its lock)
  bool pooled_ = false;  // owned by the event: a registration of the EventWaiter& form
};

/// A reusable event. Each `Stream::record` arms a new *generation*; the stream completes that
/// generation when its earlier work is done. A wait captures the generation it was asked for,
/// so re-recording the event for a later iteration never confuses an earlier waiter.
///
/// Completion: `query()` is true once the latest armed generation completed.
/// Thread safety: arm on the recording CPU thread, complete on the stream, query and wait from
/// anywhere.
/// Waiters: registered waiters sit in an intrusive list sorted by generation; `complete` wakes
/// the ones it reached one at a time, outside the event's lock, and never allocates.
/// `remove_waiter` returns only once the waiter's callback can no longer run — except when it
/// is called from inside that very callback (on the completing thread), where it returns at
/// once. So it must not be called while holding a lock the callback takes.
/// Lifetime: the event must outlive its registrations (the engines keep events in their
/// instances and synchronize streams before they go).
class Event final {
 public:
  Event() = default;
  ~Event();

  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// True once the device has passed the latest recorded point.
  [[nodiscard]] bool query() const noexcept {
    return completed_.load(std::memory_order_acquire) >= armed_.load(std::memory_order_acquire);
  }

  /// The generation the next wait should wait for (the latest armed one).
  [[nodiscard]] std::uint64_t armed_generation() const noexcept {
    return armed_.load(std::memory_order_acquire);
  }
  [[nodiscard]] bool reached(std::uint64_t generation) const noexcept {
    return completed_.load(std::memory_order_acquire) >= generation;
  }

  /// Why `generation` completed without its work done — the device faulted before it (see
  /// DeviceFault) — or nullptr: it completed normally, or has not completed yet. Meaningful
  /// once reached(generation).
  [[nodiscard]] std::exception_ptr error(std::uint64_t generation) const noexcept;

  /// Ideal completion time of `generation` (the emulated device clock), if still remembered.
  [[nodiscard]] Clock::time_point completed_at(std::uint64_t generation) const noexcept;

  /// Registers `node` (its waiter) to be told when `generation` completes; false when it
  /// already has (nothing registered then). Never allocates. `node` must not be registered.
  bool add_waiter(std::uint64_t generation, EventWait& node) noexcept;

  /// Ends the registration of `node`. True when it was still waiting (its callback will never
  /// run); false when completion took it first — its callback has then returned, unless this
  /// is called from inside it.
  bool remove_waiter(EventWait& node) noexcept;

  /// Registers `w` to be told when `generation` completes; false when it already has.
  /// A waiter may be registered with several events (and generations) at once this way: the
  /// event lends it a node from its own pool, which grows to the most registrations it held
  /// at once and is kept, so only the first registrations allocate.
  bool add_waiter(std::uint64_t generation, EventWaiter& w);

  /// Forgets every registration of `w` made with `add_waiter(generation, w)` (a waiter giving
  /// up, e.g. a stream shutting down); returns once none of its callbacks can run any more.
  void remove_waiter(EventWaiter& w) noexcept;

  /// Starts a new generation recorded on `stream` and returns it. Called by Stream::record.
  std::uint64_t arm(const void* stream) noexcept {
    stream_.store(stream, std::memory_order_relaxed);
    return armed_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }

  /// The stream that recorded the latest generation (identity only).
  [[nodiscard]] const void* recorded_on() const noexcept {
    return stream_.load(std::memory_order_relaxed);
  }

  /// The backend's own handle behind this event (a cudaEvent_t), or nullptr (host, sim, or
  /// not recorded by such a backend yet).
  [[nodiscard]] NativeEvent* native() const noexcept { return native_.get(); }
  /// Gives the event its native handle: done by Device::make_event, or by the first record on
  /// a stream of a backend with native events, before the event is shared with other threads
  /// (its record publishes it). An event has at most one, for good.
  void attach_native(std::unique_ptr<NativeEvent> native) noexcept { native_ = std::move(native); }

  /// Completes `generation` at emulated time `when` and tells its waiters (those of every
  /// generation up to it). Called by streams. Never allocates. One thread notifies at a time:
  /// a completion that arrives while another thread is still calling waiters leaves its
  /// waiters to that thread, which calls them before it returns.
  void complete(std::uint64_t generation, Clock::time_point when) noexcept;

  /// Completes `generation` as failed: its work will never be done (the device faulted).
  /// Waiters wake as for complete(), so none hangs; error(generation) then says why. Called
  /// by streams. Never allocates (the exception is shared).
  void fail(std::uint64_t generation, Clock::time_point when, std::exception_ptr error) noexcept;

 private:
  static constexpr std::size_t remembered = 8;
  using Lock = std::unique_lock<detail::SpinLock>;

  void link(EventWait& node) noexcept;
  void unlink(EventWait& node) noexcept;
  void to_pool(EventWait& node) noexcept;
  template <class InFlight>
  void wait_out_callback(Lock& lock, InFlight in_flight) noexcept;

  std::atomic<const void*> stream_{nullptr};
  std::unique_ptr<NativeEvent> native_;
  std::atomic<std::uint64_t> armed_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::array<std::atomic<Clock::rep>, remembered> when_{};
  // The generations that failed, [failed_first_, failed_last_] (0: none), and why: a faulted
  // stream fails every generation it reaches after the fault. Written under lock_.
  std::atomic<std::uint64_t> failed_first_{0};
  std::atomic<std::uint64_t> failed_last_{0};
  std::exception_ptr failure_;
  // Everything below is guarded by lock_.
  mutable detail::SpinLock lock_;
  EventWait* head_ = nullptr;  // registrations, sorted by generation (FIFO among equals)
  EventWait* tail_ = nullptr;
  EventWait* pool_ = nullptr;       // free nodes of the EventWaiter& form, linked by next_
  EventWait* in_flight_ = nullptr;  // taken off the list, its callback running unlocked
  std::thread::id notifier_;        // the thread inside complete()'s loop, if any
  bool notifying_ = false;
};

}  // namespace swp
