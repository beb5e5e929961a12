#pragma once
// RunTrace: records what a pipeline run did on the CPU (per lane) and on the streams, so tests
// can check every dependency and ordering rule after the fact.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "swp/async/lane.hpp"
#include "swp/device/stream.hpp"
#include "swp/engine/task_observer.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::test {

class RunTrace final : public TaskObserver, public DeviceObserver {
 public:
  struct Cpu {
    std::uint64_t started = 0, finished = 0;  // global sequence numbers (happens-before order)
    std::string lane;
    bool ok = false;
  };
  struct Device {
    std::string stream;
    Clock::time_point start, end;
  };
  using Key = std::pair<TaskIndex, std::int64_t>;

  void task_released(TaskIndex t, std::int64_t i, const Lane& lane) noexcept override {
    std::lock_guard lock(mutex_);
    released_[lane.name()].push_back({t, i});
  }
  void task_started(TaskIndex t, std::int64_t i, const Lane& lane) noexcept override {
    const auto seq = clock_.fetch_add(1) + 1;
    std::lock_guard lock(mutex_);
    cpu_[{t, i}].started = seq;
    cpu_[{t, i}].lane = lane.name();
    started_[lane.name()].push_back({t, i});
  }
  void task_finished(TaskIndex t, std::int64_t i, const Lane&, bool ok) noexcept override {
    const auto seq = clock_.fetch_add(1) + 1;
    std::lock_guard lock(mutex_);
    cpu_[{t, i}].finished = seq;
    cpu_[{t, i}].ok = ok;
  }
  void device_work(const Stream& s, const DeviceWork& w) noexcept override {
    std::lock_guard lock(mutex_);
    const Key key{static_cast<TaskIndex>(w.tag.task), w.tag.iter};
    device_[key] = Device{s.name(), w.start, w.end};
  }

  void attach(Stream& s) { s.set_observer(this); }

  std::map<Key, Cpu> cpu() const {
    std::lock_guard lock(mutex_);
    return cpu_;
  }
  std::map<Key, Device> device() const {
    std::lock_guard lock(mutex_);
    return device_;
  }
  std::map<std::string, std::vector<Key>> released() const {
    std::lock_guard lock(mutex_);
    return released_;
  }
  std::map<std::string, std::vector<Key>> started() const {
    std::lock_guard lock(mutex_);
    return started_;
  }

 private:
  mutable std::mutex mutex_;
  std::atomic<std::uint64_t> clock_{0};
  std::map<Key, Cpu> cpu_;
  std::map<Key, Device> device_;
  std::map<std::string, std::vector<Key>> released_, started_;
};

}  // namespace swp::test
