#include "swp/device/cuda/cuda_stream.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../item_queue.hpp"
#include "cuda_check.hpp"
#include "cuda_native_event.hpp"
#include "cuda_poller.hpp"
#include "spin_kernel.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_graph.hpp"

namespace swp {

using detail::StreamItem;

// What the stream's host functions do, one item each, in the order they were enqueued (host
// functions of one stream run in stream order): complete a recorded generation, run a
// callable, tell observers about finished work.
struct CudaStream::Pending {
  detail::ItemQueue items;  // host functions' items
  // Polling mode: records and work items, each with the CUDA event recorded after it.
  struct Polled {
    CUevent_st* event;
    StreamItem item;
  };
  std::deque<Polled> polled;
  std::vector<CUevent_st*> spare_events;  // polled events to record again
};

namespace {

void CUDART_CB run_host_function(void* stream) { static_cast<CudaStream*>(stream)->run_pending(); }

// The CUDA events of `event` for `device`, made at its first record when the event came
// without them (a plain swp::Event). An event of another device is refused: its CUDA events
// belong to another context.
detail::CudaNativeEvent& native_of(Event& event, const CudaDevice& device,
                                   const std::string& stream) {
  if (event.native() == nullptr)
    event.attach_native(std::make_unique<detail::CudaNativeEvent>(device));
  if (&event.native()->owner() != &device)
    throw std::invalid_argument("cuda stream '" + stream +
                                "' cannot record an event made by another device");
  return static_cast<detail::CudaNativeEvent&>(*event.native());
}

}  // namespace

CudaStream::CudaStream(const CudaDevice& device, std::string name, int priority)
    : Stream(std::move(name), priority),
      device_(device),
      pending_(std::make_unique<Pending>()) {
  device_.make_current();
  cudaStream_t stream = nullptr;
  detail::cuda_check(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority),
                     "cudaStreamCreateWithPriority", "stream '" + this->name() + "'");
  stream_ = stream;
  polling_ = device_.completion() == CudaCompletion::polling;
  poller_ = device_.poller();
  if (poller_ != nullptr) poller_->add(*this);
}

CudaStream::~CudaStream() {
  // Everything queued finishes first: host functions still to run point at this stream.
  const cudaError_t status = cudaStreamSynchronize(stream_);
  if (status != cudaSuccess) fault_with(status, "cudaStreamSynchronize");
  if (poller_ != nullptr) poller_->remove(*this);
  // After a fault, host functions behind it never run: their items fail here.
  fail_pending();
  if (polling_) {
    // The GPU got through everything: what the poller has not run yet runs here, in order
    // (waiters of recorded generations are completed, none hangs).
    auto& polled = pending_->polled;
    for (; !polled.empty(); polled.pop_front()) {
      StreamItem& item = polled.front().item;
      if (faulted() && item.kind == StreamItem::Kind::record) {
        item.event->fail(item.generation, Clock::now(), fault());
      } else {
        run_item(item);
      }
      pending_->spare_events.push_back(polled.front().event);
    }
    for (CUevent_st* event : pending_->spare_events) (void)cudaEventDestroy(event);
  }
  graphs_.clear();  // before the stream they were launched on
  (void)cudaStreamDestroy(stream_);
}

void CudaStream::run_pending() noexcept {
  StreamItem item;
  {
    std::lock_guard lock(mutex_);
    if (pending_->items.empty()) return;  // failed already (fail_pending, after a fault)
    item = std::move(pending_->items.front());
    pending_->items.pop_front();
  }
  run_item(item);
}

void CudaStream::fault_with(int status, const char* call) noexcept {
  try {
    detail::cuda_check(static_cast<cudaError_t>(status), call, "stream '" + name() + "'");
  } catch (...) {
    set_fault(std::current_exception());
  }
}

void CudaStream::fail_pending() noexcept {
  if (!faulted()) return;
  for (;;) {
    StreamItem item;
    {
      std::lock_guard lock(mutex_);
      if (pending_->items.empty()) return;
      item = std::move(pending_->items.front());
      pending_->items.pop_front();
    }
    // Records fail (no waiter hangs); callables and observed work never ran on the device.
    if (item.kind == StreamItem::Kind::record)
      item.event->fail(item.generation, Clock::now(), fault());
  }
}

CudaStream::PollResult CudaStream::watch_fault() noexcept {
  std::lock_guard polling(poll_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (pending_->items.empty()) return {};
  }
  if (!faulted()) {
    const cudaError_t status = cudaStreamQuery(stream_);
    if (status == cudaSuccess || status == cudaErrorNotReady) return {.waiting = true};
    (void)cudaGetLastError();
    fault_with(status, "cudaStreamQuery");
  }
  fail_pending();
  return {.completed = true};
}

void CudaStream::run_item(StreamItem& item) noexcept {
  const auto now = Clock::now();
  switch (item.kind) {
    case StreamItem::Kind::record:
      // Waiters only signal (EventWaiter's contract): no user code, no CUDA call here.
      item.event->complete(item.generation, now);
      return;
    case StreamItem::Kind::call: {
      const auto start = now;
      try {
        item.call();
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      if (observer_ != nullptr)
        observer_->device_work(*this, DeviceWork{item.tag, start, Clock::now()});
      return;
    }
    case StreamItem::Kind::work: {
      // The kernel ended just before this host function ran; it started when the stream got to
      // it: after the work before it and after it was enqueued (an estimate: waits on other
      // streams are not seen from here).
      Clock::time_point start;
      {
        std::lock_guard lock(mutex_);
        start = std::max(std::max(item.enqueued, last_end_), now - item.duration);
        last_end_ = now;
      }
      if (observer_ != nullptr) observer_->device_work(*this, DeviceWork{item.tag, start, now});
      return;
    }
    case StreamItem::Kind::wait:
    case StreamItem::Kind::fault:
      return;  // never queued here: waits are the GPU's, faults a trapping kernel
  }
}

CUevent_st* CudaStream::take_event() {
  {
    std::lock_guard lock(mutex_);
    auto& spare = pending_->spare_events;
    if (!spare.empty()) {
      CUevent_st* event = spare.back();
      spare.pop_back();
      return event;
    }
  }
  cudaEvent_t event = nullptr;
  detail::cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                     "cudaEventCreateWithFlags", "stream '" + name() + "'");
  return event;
}

CudaStream::PollResult CudaStream::poll() noexcept {
  if (!polling_) return watch_fault();
  std::lock_guard polling(poll_mutex_);  // items complete in order, on one thread at a time
  PollResult result;
  for (;;) {
    CUevent_st* event = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (pending_->polled.empty()) return result;
      event = pending_->polled.front().event;
    }
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaErrorNotReady) {
      result.waiting = true;
      return result;
    }
    // The stream failed (a kernel fault, sticky): the item completes failed, so that no
    // waiter hangs; synchronize() reports the fault.
    if (status != cudaSuccess) fault_with(status, "cudaEventQuery");
    StreamItem item;
    {
      std::lock_guard lock(mutex_);
      item = std::move(pending_->polled.front().item);
      pending_->polled.pop_front();
      pending_->spare_events.push_back(event);
    }
    if (faulted() && item.kind == StreamItem::Kind::record) {
      item.event->fail(item.generation, Clock::now(), fault());
    } else {
      run_item(item);
    }
    result.completed = true;
  }
}

void CudaStream::enqueue_host_function(StreamItem&& item) {
  // Polling mode: a record or a work item is an event recorded after the work before it, and
  // the poller completes the item once the event completed. Callables stay host functions:
  // GPU work queued after a callable must wait for it (a consumer on another stream waits for
  // an event recorded after it), which only a host function gives.
  if (polling_ && item.kind != StreamItem::Kind::call) {
    device_.make_current();
    CUevent_st* event = take_event();
    cudaError_t status = cudaSuccess;
    {
      // Recorded and queued under one lock: the queue's order is the GPU's.
      std::lock_guard lock(mutex_);
      status = cudaEventRecord(event, stream_);
      if (status == cudaSuccess) {
        pending_->polled.push_back({event, std::move(item)});
      } else {
        pending_->spare_events.push_back(event);
      }
    }
    detail::cuda_check(status, "cudaEventRecord", "stream '" + name() + "'");
    poller_->nudge();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    pending_->items.push_back(std::move(item));
  }
  const cudaError_t status = cudaLaunchHostFunc(stream_, run_host_function, this);
  if (status != cudaSuccess) {
    {
      std::lock_guard lock(mutex_);
      pending_->items.pop_back();
    }
    detail::cuda_check(status, "cudaLaunchHostFunc", "stream '" + name() + "'");
  }
  // Host-function mode: the poller watches for a fault that would keep it from running.
  if (poller_ != nullptr) poller_->nudge();
}

void CudaStream::enqueue_fault(std::string) {
  device_.make_current();
  const int status = detail::launch_trap(stream_);
  if (status != 0) fault_with(status, "cudaLaunchKernel");
}

void CudaStream::enqueue_work(Clock::duration duration, WorkTag tag) {
  if (duration <= Clock::duration::zero()) return;
  device_.make_current();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
  const auto spin = [this, ns](cudaStream_t s) {
    detail::cuda_check(
        static_cast<cudaError_t>(detail::launch_spin(s, static_cast<std::uint64_t>(ns))),
        "cudaLaunchKernel", "the spin kernel on stream '" + name() + "'");
  };
  bool replayed = false;
  if (device_.replays_work_from_graphs()) {
    std::lock_guard lock(graphs_mutex_);
    auto found = graphs_.find(ns);
    if (found == graphs_.end() && graphs_.size() < max_graphs)
      found = graphs_.emplace(ns, std::make_unique<CudaGraph>(0)).first;
    if (found != graphs_.end()) {
      found->second->run(*this, spin);
      replayed = true;
    }
  }
  if (!replayed) spin(stream_);
  if (observer_ != nullptr)
    enqueue_host_function(
        StreamItem{StreamItem::Kind::work, duration, tag, nullptr, 0, Clock::now()});
}

void CudaStream::enqueue(std::function<void()> work, Clock::duration, WorkTag tag) {
  StreamItem item{StreamItem::Kind::call, {}, tag, nullptr, 0, Clock::now()};
  item.call = std::move(work);
  enqueue_host_function(std::move(item));
}

std::uint64_t CudaStream::record(Event& event) {
  detail::CudaNativeEvent& native = native_of(event, device_, name());
  const std::uint64_t generation = event.arm(this);
  if (!faulted()) {
    try {
      detail::cuda_check(cudaEventRecord(native.of(generation), stream_), "cudaEventRecord",
                         "stream '" + name() + "'");
      enqueue_host_function(
          StreamItem{StreamItem::Kind::record, {}, {}, &event, generation, Clock::now()});
      return generation;
    } catch (...) {
      // A record fails after a device fault (CUDA's errors are sticky): the stream faulted.
      set_fault(std::current_exception());
    }
  }
  // Armed but never to be completed by the GPU: failed here, so no CPU waiter hangs on it
  // and whoever waits for it learns why (Event::error).
  event.fail(generation, Clock::now(), fault());
  return generation;
}

void CudaStream::wait(const Event& event, std::uint64_t generation) {
  if (event.recorded_on() == this) return;  // stream order already
  if (generation == 0) generation = event.armed_generation();
  if (generation == 0 || event.reached(generation)) return;
  const NativeEvent* native = event.native();
  if (native == nullptr || &native->owner() != &device_)
    throw std::invalid_argument("cuda stream '" + name() + "' cannot wait for generation " +
                                std::to_string(generation) +
                                " of an event that a stream of another device recorded");
  if (event.armed_generation() - generation >= detail::CudaNativeEvent::ring)
    throw std::logic_error("cuda stream '" + name() + "' waits for generation " +
                           std::to_string(generation) + " of an event recorded " +
                           std::to_string(event.armed_generation() - generation) +
                           " times since: wait before it is recorded " +
                           std::to_string(detail::CudaNativeEvent::ring) + " times more");
  const auto& cuda = static_cast<const detail::CudaNativeEvent&>(*native);
  detail::cuda_check(cudaStreamWaitEvent(stream_, cuda.of(generation), 0), "cudaStreamWaitEvent",
                     "stream '" + name() + "'");
}

std::uint64_t CudaStream::graph_replays() const {
  std::lock_guard lock(graphs_mutex_);
  std::uint64_t replays = 0;
  for (const auto& [ns, graph] : graphs_) replays += graph->replays();
  return replays;
}

void CudaStream::synchronize() {
  if (faulted()) std::rethrow_exception(fault());
  const cudaError_t status = cudaStreamSynchronize(stream_);
  if (status != cudaSuccess) {
    fault_with(status, "cudaStreamSynchronize");
    fail_pending();
    std::rethrow_exception(fault());
  }
  // Polling mode: the GPU got there, the poller may not have yet; what was queued before this
  // call runs now (host functions have run when cudaStreamSynchronize returns).
  if (poller_ != nullptr) (void)poll();
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace swp
