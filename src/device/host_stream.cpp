#include <sys/prctl.h>

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "item_queue.hpp"
#include "stream_item.hpp"
#include "swp/device/device_fault.hpp"
#include "swp/device/host_device.hpp"

namespace swp {

namespace {

using detail::StreamItem;

class HostStream final : public Stream, private EventWaiter {
 public:
  // The worker thread starts with the stream's first item (see push): a runtime makes a stream
  // for every name its plans use ("default" included), and most never queue anything.
  HostStream(std::string name, ThreadStartHook on_start)
      : Stream(std::move(name)), on_start_(std::move(on_start)) {}

  ~HostStream() override {
    worker_.request_stop();  // no-op when it never started
    {
      std::lock_guard lock(mutex_);
    }
    changed_.notify_all();
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
      if (!worker_.joinable())
        worker_ = std::jthread([this](const std::stop_token& stop) { work(stop); });
    }
    changed_.notify_all();
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
        changed_.wait(lock, [&] { return !items_.empty() || stop.stop_requested(); });
        if (items_.empty()) return;  // stop requested and nothing left
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
  std::exception_ptr error_;        // the first exception a call threw (under mutex_)
  Clock::time_point clock_{};       // emulated device clock: end of the last item (worker only)
  Clock::time_point idle_clock_{};  // clock_ as of the last finished item (under mutex_)
  ThreadStartHook on_start_;
  std::jthread worker_;  // last member: joined before the rest goes; started by push (under mutex_)
};

}  // namespace

std::unique_ptr<Stream> HostDevice::make_stream(std::string name) {
  return std::make_unique<HostStream>(std::move(name), on_thread_start_);
}

}  // namespace swp
