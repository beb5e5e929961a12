#include <sys/prctl.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "item_queue.hpp"
#include "stream_item.hpp"
#include "swp/device/device_fault.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/stream_limit_error.hpp"

namespace swp {

namespace detail {

// A host device's streams and their running threads, counted by the streams themselves.
// Relaxed: they are counts, ordering nothing else (a stream's own state is under its mutex).
struct HostStreamCounts {
  std::atomic<std::size_t> streams{0};
  std::atomic<std::size_t> threads{0};
};

}  // namespace detail

namespace {

using detail::StreamItem;

class HostStream final : public Stream, private EventWaiter {
 public:
  // The worker thread starts with the stream's first item (see push): a runtime makes a stream
  // for every name its plans use ("default" included), and most never queue anything. It exits
  // after `idle_exit` without an item, and the next push starts another. `counts` already
  // counts this stream (HostDevice::make_stream); the destructor takes it off.
  HostStream(std::string name, std::shared_ptr<detail::HostStreamCounts> counts,
             Clock::duration idle_exit, ThreadStartHook on_start)
      : Stream(std::move(name)),
        counts_(std::move(counts)),
        idle_exit_(idle_exit),
        on_start_(std::move(on_start)) {}

  ~HostStream() override {
    worker_.request_stop();  // no-op when it never started
    {
      std::lock_guard lock(mutex_);
    }
    changed_.notify_all();
    if (worker_.joinable()) worker_.join();  // before the count: a thread counts until it left
    counts_->streams.fetch_sub(1, std::memory_order_relaxed);
  }

  void enqueue_work(Clock::duration duration, WorkTag tag) override {
    push(StreamItem{StreamItem::Kind::work, duration, tag, nullptr, 0, Clock::now()});
  }

  void enqueue(std::function<void()> work, Clock::duration modelled, WorkTag tag) override {
    push(StreamItem{StreamItem::Kind::call, modelled, tag, nullptr, 0, Clock::now(),
                    std::move(work)});
  }

  std::uint64_t record(Event& event) override {
    const auto generation = event.arm(this);
    const auto now = Clock::now();
    {
      std::unique_lock lock(mutex_);
      if (items_.empty() && !busy_) {
        // Nothing queued: the stream already passed this point. Completing here spares the
        // worker a wake-up, which matters for pipelines of small tasks.
        const auto when = std::max(idle_clock_, now);
        lock.unlock();
        if (faulted()) {
          event.fail(generation, when, fault());
        } else {
          event.complete(generation, when);
        }
        return generation;
      }
      // Items are queued, so the worker runs (push started it).
      items_.push_back(StreamItem{StreamItem::Kind::record, {}, {}, &event, generation, now});
    }
    changed_.notify_all();
    return generation;
  }

  void wait(const Event& event, std::uint64_t generation) override {
    if (event.recorded_on() == this) return;
    if (generation == 0) generation = event.armed_generation();
    if (generation == 0) return;
    if (event.reached(generation)) {  // nothing left to wait for, unless it failed
      if (auto failed = event.error(generation)) push(detail::fault_item(failed, Clock::now()));
      return;
    }
    push(StreamItem{StreamItem::Kind::wait, {}, {}, const_cast<Event*>(&event), generation,
                    Clock::now()});
  }

  void enqueue_fault(std::string what) override {
    push(detail::fault_item(std::make_exception_ptr(DeviceFault(name(), what)), Clock::now()));
  }

  void synchronize() override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return items_.empty() && !busy_; });
    if (faulted()) std::rethrow_exception(fault());
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void push(StreamItem item) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
      // Started under the lock: concurrent first pushes start one thread. The worker takes the
      // lock before it reads anything, so it starts after this push.
      if (!running_) start_worker();
    }
    changed_.notify_all();
  }

  // Under mutex_. A worker that left (idle) is joined first: it set running_ to false as the
  // last thing it did under the lock and touches nothing of the stream after it, so the join
  // waits for its thread's exit only (and it is never this thread: the worker's own pushes
  // find running_ true).
  void start_worker() {
    if (worker_.joinable()) worker_.join();
    counts_->threads.fetch_add(1, std::memory_order_relaxed);
    try {
      worker_ = std::jthread([this](const std::stop_token& stop) { work(stop); });
    } catch (...) {  // no thread to be had: the push fails as a whole, its item taken back
      counts_->threads.fetch_sub(1, std::memory_order_relaxed);
      items_.pop_back();
      throw;
    }
    running_ = true;
  }

  // Waits under `lock` until an item is queued or stop is requested; false when the stream
  // stayed idle for idle_exit_ (the caller then exits).
  bool wait_for_item(std::unique_lock<std::mutex>& lock, const std::stop_token& stop) {
    const auto ready = [&] { return !items_.empty() || stop.stop_requested(); };
    const auto now = Clock::now();
    if (idle_exit_ > Clock::time_point::max() - now) {  // never (Clock::duration::max())
      changed_.wait(lock, ready);
      return true;
    }
    return changed_.wait_until(lock, now + idle_exit_, ready);
  }

  void event_completed() noexcept override {
    {
      std::lock_guard lock(mutex_);
    }
    changed_.notify_all();
  }

  void work(const std::stop_token& stop) {
    begin_thread({ThreadStart::Role::stream, name(), 0}, on_start_);
    prctl(PR_SET_TIMERSLACK, 1UL);  // wake within microseconds of a work item's end
    for (;;) {
      StreamItem item{};
      {
        std::unique_lock lock(mutex_);
        wait_for_item(lock, stop);
        if (items_.empty()) {  // stop requested and nothing left, or idle for idle_exit_
          running_ = false;    // the next push starts another thread (after joining this one)
          counts_->threads.fetch_sub(1, std::memory_order_relaxed);
          return;
        }
        item = std::move(items_.front());  // a call's callable too, without a copy
        busy_ = true;
      }
      run(item, stop);
      {
        std::lock_guard lock(mutex_);
        items_.pop_front();
        busy_ = false;
        idle_clock_ = clock_;
      }
      changed_.notify_all();
    }
  }

  void run(const StreamItem& item, const std::stop_token& stop) {
    if (faulted()) {
      detail::run_faulted(item, fault(), clock_);
      return;
    }
    switch (item.kind) {
      case StreamItem::Kind::fault:
        set_fault(item.fault);
        break;
      case StreamItem::Kind::work: {
        const auto start = std::max(item.enqueued, clock_);
        const auto end = start + item.duration;
        std::this_thread::sleep_until(end);
        clock_ = end;
        if (observer_ != nullptr) observer_->device_work(*this, DeviceWork{item.tag, start, end});
        break;
      }
      case StreamItem::Kind::call: {
        // Real work: it takes as long as it runs, from when the stream reaches it.
        const auto start = std::max(clock_, Clock::now());
        try {
          item.call();
        } catch (...) {
          std::lock_guard lock(mutex_);
          if (!error_) error_ = std::current_exception();  // synchronize() rethrows it
        }
        const auto end = std::max(start, Clock::now());
        clock_ = end;
        if (observer_ != nullptr) observer_->device_work(*this, DeviceWork{item.tag, start, end});
        break;
      }
      case StreamItem::Kind::record:
        clock_ = std::max(clock_, item.enqueued);
        item.event->complete(item.generation, clock_);
        break;
      case StreamItem::Kind::wait: {
        if (item.event->add_waiter(item.generation, wait_)) {
          {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [&] {
              return item.event->reached(item.generation) || stop.stop_requested();
            });
          }
          // Unlinks wait_ when the stream stops first; otherwise waits until the completing
          // thread's call of event_completed returned, so wait_ is free for the next wait and
          // the stream may go. Unlocked: that call takes mutex_.
          item.event->remove_waiter(wait_);
        }
        clock_ = std::max(clock_, detail::ideal_completion(*item.event, item.generation,
                                                           Clock::now()));
        // What it waited for will never be done: nothing after it may run (as on a GPU).
        if (auto failed = item.event->error(item.generation)) set_fault(failed);
        break;
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  detail::ItemQueue items_;  // grows to the most items ever queued at once, then never allocates
  EventWait wait_{*this};     // this stream's registration while it runs a wait item
  bool busy_ = false;
  bool running_ = false;            // a worker thread runs, or is about to (under mutex_)
  std::exception_ptr error_;        // the first exception a call threw (under mutex_)
  Clock::time_point clock_{};       // emulated device clock: end of the last item (worker only)
  Clock::time_point idle_clock_{};  // clock_ as of the last finished item (under mutex_)
  std::shared_ptr<detail::HostStreamCounts> counts_;
  Clock::duration idle_exit_;
  ThreadStartHook on_start_;
  // Last member: joined before the rest goes; started by push (under mutex_), and again after
  // the last one left idle.
  std::jthread worker_;
};

}  // namespace

HostDevice::HostDevice(HostDeviceOptions options)
    : options_(options), counts_(std::make_shared<detail::HostStreamCounts>()) {
  if (options_.max_streams == 0)
    throw std::invalid_argument("HostDevice: max_streams must be at least 1");
}

HostDevice::~HostDevice() = default;

std::unique_ptr<Stream> HostDevice::make_stream(std::string name) {
  // Counted before the stream is made, so that concurrent calls never pass the limit together.
  std::size_t have = counts_->streams.load(std::memory_order_relaxed);
  do {
    if (have >= options_.max_streams)
      throw StreamLimitError(
          name, "host device: cannot make stream '" + name + "': the device has " +
                    std::to_string(have) + (have == 1 ? " stream" : " streams") +
                    ", its limit (HostDeviceOptions::max_streams, on a "
                    "Runtime RuntimeOptions::max_host_streams, default " +
                    std::to_string(default_max_host_streams) +
                    "), since each host stream may run a thread of its own; raise the limit, "
                    "give the plan fewer streams, or run it on the sim backend (no threads per "
                    "stream)");
  } while (!counts_->streams.compare_exchange_weak(have, have + 1, std::memory_order_relaxed));
  try {
    return std::make_unique<HostStream>(std::move(name), counts_, options_.idle_exit,
                                        on_thread_start_);
  } catch (...) {
    counts_->streams.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
}

std::size_t HostDevice::streams() const noexcept {
  return counts_->streams.load(std::memory_order_relaxed);
}

std::optional<std::size_t> HostDevice::streams_left() const noexcept {
  // A stream being made counts already (make_stream), so this never overstates the room.
  const std::size_t have = streams();
  return have >= options_.max_streams ? 0 : options_.max_streams - have;
}

std::size_t HostDevice::stream_threads() const noexcept {
  return counts_->threads.load(std::memory_order_relaxed);
}

}  // namespace swp
