#include <exception>
#include <functional>
#include <stdexcept>
#include <utility>

#include "item_queue.hpp"
#include "stream_item.hpp"
#include "swp/device/device_fault.hpp"
#include "swp/device/sim_device.hpp"

namespace swp {

namespace {

using detail::StreamItem;

// Processes its queue as a Runnable on the SimScheduler: a work item parks the stream until
// virtual time reaches its end, a wait parks it until the event's generation completes.
class SimStream final : public Stream, private Runnable, private EventWaiter {
 public:
  SimStream(SimScheduler& scheduler, std::string name)
      : Stream(std::move(name)), scheduler_(scheduler) {}

  ~SimStream() override {
    if (waiting_on_ != nullptr) waiting_on_->remove_waiter(wait_);
  }

  void enqueue_work(Clock::duration duration, WorkTag tag) override {
    push(StreamItem{StreamItem::Kind::work, duration, tag, nullptr, 0, scheduler_.now()});
  }

  void enqueue(std::function<void()> work, Clock::duration modelled, WorkTag tag) override {
    push(StreamItem{StreamItem::Kind::call, modelled, tag, nullptr, 0, scheduler_.now(),
                    std::move(work)});
  }

  std::uint64_t record(Event& event) override {
    const auto generation = event.arm(this);
    if (items_.empty() && !in_work_) {  // idle: the point is already passed
      if (faulted()) {
        event.fail(generation, scheduler_.now(), fault());
      } else {
        event.complete(generation, scheduler_.now());
      }
      return generation;
    }
    push(StreamItem{StreamItem::Kind::record, {}, {}, &event, generation, scheduler_.now()});
    return generation;
  }

  void wait(const Event& event, std::uint64_t generation) override {
    if (event.recorded_on() == this) return;
    if (generation == 0) generation = event.armed_generation();
    if (generation == 0) return;
    if (event.reached(generation)) {  // nothing left to wait for, unless it failed
      if (auto failed = event.error(generation))
        push(detail::fault_item(failed, scheduler_.now()));
      return;
    }
    push(StreamItem{StreamItem::Kind::wait, {}, {}, const_cast<Event*>(&event), generation,
                    scheduler_.now()});
  }

  void enqueue_fault(std::string what) override {
    push(detail::fault_item(std::make_exception_ptr(DeviceFault(name(), what)),
                            scheduler_.now()));
  }

  void synchronize() override {
    const bool empty = scheduler_.drive_until([&] { return items_.empty(); },
                                              Clock::time_point::max());
    if (!empty)
      throw std::runtime_error("sim stream '" + name() +
                               "' can never drain: it waits for an event nothing will record");
    if (faulted()) std::rethrow_exception(fault());
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void push(StreamItem item) {
    items_.push_back(std::move(item));
    wake();
  }

  void wake() {
    if (scheduled_ || in_work_ || waiting_on_ != nullptr) return;
    scheduled_ = true;
    scheduler_.post(*this);
  }

  void event_completed() noexcept override {
    waiting_on_ = nullptr;
    wake();
  }

  void run() noexcept override {
    scheduled_ = false;
    if (in_work_) {  // the timer of the front work item fired
      in_work_ = false;
      const StreamItem item = items_.front();  // a copy: the observer may queue more
      clock_ = work_end_;
      if (observer_ != nullptr)
        observer_->device_work(*this, DeviceWork{item.tag, work_end_ - item.duration, work_end_});
      items_.pop_front();
    }
    while (!items_.empty()) {
      // A copy: completing an event runs waiters' callbacks, which may queue more items. (A
      // call's callable is moved out: it runs once, and its modelled time follows as work.)
      const StreamItem item = std::move(items_.front());
      if (faulted()) {  // nothing runs, nothing takes device time; records fail
        detail::run_faulted(item, fault(), scheduler_.now());
        items_.pop_front();
        continue;
      }
      switch (item.kind) {
        case StreamItem::Kind::fault:
          set_fault(item.fault);
          break;
        case StreamItem::Kind::call:
          // Counted as working meanwhile: what the call queues on this stream waits behind it
          // instead of waking the stream.
          in_work_ = true;
          try {
            item.call();
          } catch (...) {
            if (!error_) error_ = std::current_exception();  // synchronize() rethrows it
          }
          in_work_ = false;
          [[fallthrough]];  // then its modelled device time, like work
        case StreamItem::Kind::work: {
          const auto start = std::max({item.enqueued, clock_, scheduler_.now()});
          work_end_ = start + item.duration;
          in_work_ = true;
          scheduler_.post_at(work_end_, *this);
          return;
        }
        case StreamItem::Kind::record:
          item.event->complete(item.generation, scheduler_.now());
          break;
        case StreamItem::Kind::wait:
          if (item.event->add_waiter(item.generation, wait_)) {
            waiting_on_ = item.event;
            return;
          }
          // What it waited for will never be done: nothing after it may run.
          if (auto failed = item.event->error(item.generation)) set_fault(failed);
          break;
      }
      items_.pop_front();
    }
  }

  SimScheduler& scheduler_;
  detail::ItemQueue items_;  // grows to the most items ever queued at once, then never allocates
  EventWait wait_{*this};    // this stream's registration while a wait item blocks it
  Clock::time_point clock_{};
  Clock::time_point work_end_{};
  Event* waiting_on_ = nullptr;
  std::exception_ptr error_;  // the first exception a call threw
  bool scheduled_ = false;
  bool in_work_ = false;
};

}  // namespace

std::unique_ptr<Stream> SimDevice::make_stream(std::string name) {
  return std::make_unique<SimStream>(scheduler_, std::move(name));
}

}  // namespace swp
