#include "run_meter.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

namespace swp::detail {

namespace {

// A cost as the engine spends it (Pipeline::synthetic): microseconds to the clock's ticks.
Clock::duration spent(double us) {
  if (!(us > 0)) return {};
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(us));
}

double as_us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Iterations i of [first, last] with i % every == every - 1: those that jitter.
std::int64_t jittering(std::int64_t first, std::int64_t last, std::int64_t every) {
  return (last + 1) / every - first / every;
}

// Numbers the distinct names `name_of(t)` of the tasks, in the order tasks first use them.
template <class NameOf>
std::size_t number(const PlanGraph& graph, NameOf name_of, std::vector<std::size_t>& index_of) {
  std::map<std::string, std::size_t> seen;
  index_of.resize(graph.size());
  for (TaskIndex t = 0; t < graph.size(); ++t)
    index_of[t] = seen.try_emplace(name_of(t), seen.size()).first->second;
  return seen.size();
}

}  // namespace

SteadyWindow steady_window(std::int64_t iters, int slots) noexcept {
  if (iters < min_steady_iters(slots)) return {};
  return {.first = slots + 1, .last = iters - slots - 1};
}

void RunMeter::Span::cover(Clock::time_point from, Clock::time_point to) noexcept {
  first = std::min(first, from);
  last = std::max(last, to);
}

RunMeter::RunMeter(const PlanGraph& graph, std::int64_t iters, int slots, Runtime& runtime,
                   bool track_lanes, RunObserver* next)
    : graph_(graph),
      window_(steady_window(iters, slots)),
      measured_(window_.empty() ? SteadyWindow{.first = 0, .last = iters - 1} : window_),
      runtime_(runtime),
      track_lanes_(track_lanes),
      next_(next) {
  streams_ = number(
      graph, [&](TaskIndex t) { return graph.stream(t); }, stream_of_);
  lanes_ = number(
      graph, [&](TaskIndex t) { return graph.lane(t); }, lane_of_);
  stream_spans_.resize(streams_);
  lane_spans_.resize(lanes_);
}

void RunMeter::completed(std::int64_t iter, Clock::time_point at) noexcept {
  if (iter < window_.first) before_ = std::max(before_, at);
  if (iter <= window_.last) through_ = std::max(through_, at);
}

void RunMeter::retired(std::int64_t iter, Clock::time_point at) {
  std::lock_guard lock(mutex_);
  completed(iter, at);
}

void RunMeter::device_work(const Stream& stream, const DeviceWork& work) noexcept {
  if (next_ != nullptr) next_->device_work(stream, work);
  if (work.tag.task >= graph_.size()) return;  // not a task's work
  std::lock_guard lock(mutex_);
  completed(work.tag.iter, work.end);
  if (measured_.contains(work.tag.iter))
    stream_spans_[stream_of_[work.tag.task]].cover(work.start, work.end);
}

void RunMeter::task_released(TaskIndex task, std::int64_t iter, const Lane& lane) noexcept {
  if (next_ != nullptr) next_->task_released(task, iter, lane);
}

void RunMeter::task_waiting(TaskIndex task, std::int64_t iter, const Lane& lane,
                            const TaskWait& wait) noexcept {
  if (next_ != nullptr) next_->task_waiting(task, iter, lane, wait);
}

void RunMeter::task_started(TaskIndex task, std::int64_t iter, const Lane& lane) noexcept {
  if (next_ != nullptr) next_->task_started(task, iter, lane);
  if (!track_lanes_ || !measured_.contains(iter)) return;
  const auto now = runtime_.now();
  std::lock_guard lock(mutex_);
  lane_spans_[lane_of_[task]].cover(now, now);
}

void RunMeter::task_finished(TaskIndex task, std::int64_t iter, const Lane& lane,
                             bool ok) noexcept {
  if (next_ != nullptr) next_->task_finished(task, iter, lane, ok);
  if (!track_lanes_ || !measured_.contains(iter)) return;
  const auto now = runtime_.now();
  std::lock_guard lock(mutex_);
  lane_spans_[lane_of_[task]].cover(now, now);
}

BusiestResource RunMeter::busiest() const {
  std::vector<Clock::duration> device(streams_), cpu(lanes_);
  const std::int64_t n = measured_.size();
  for (TaskIndex t = 0; t < graph_.size(); ++t) {
    const SyntheticCost& cost = graph_.cost(t);
    const std::int64_t jitters =
        cost.jitter_every > 0 ? jittering(measured_.first, measured_.last, cost.jitter_every) : 0;
    device[stream_of_[t]] +=
        spent(cost.device_us) * (n - jitters) + spent(cost.jitter_device_us) * jitters;
    cpu[lane_of_[t]] += spent(cost.cpu_us) * n;
  }
  BusiestResource busiest;
  for (std::size_t s = 0; s < streams_; ++s)
    if (device[s] > busiest.work) busiest = {device[s], true, s};
  for (std::size_t l = 0; l < lanes_; ++l)
    if (cpu[l] > busiest.work) busiest = {cpu[l], false, l};
  return busiest;
}

RunMeter::Result RunMeter::result(const RunStats& stats) const {
  std::lock_guard lock(mutex_);
  Result result;
  result.steady_state = !window_.empty();
  if (measured_.empty()) return result;
  // The time the measured iterations took: the spacing of completions over the window (or the
  // whole run), and never less than the busiest resource's span over their work — that
  // resource did all of it in that span, while the spacing can undercount at the window's
  // edges. Hence, on sim, bound <= measured and efficiency <= 1 exactly.
  Clock::duration taken = result.steady_state ? through_ - before_ : stats.elapsed;
  const BusiestResource busiest_resource = busiest();
  const Span* span = busiest_resource.is_stream ? &stream_spans_[busiest_resource.index]
                     : track_lanes_             ? &lane_spans_[busiest_resource.index]
                                                : nullptr;
  if (busiest_resource.work > Clock::duration::zero() && span != nullptr &&
      span->first <= span->last)
    taken = std::max(taken, span->last - span->first);
  const auto n = static_cast<double>(measured_.size());
  result.us_per_iter = as_us(taken) / n;
  result.bound_us_per_iter = as_us(busiest_resource.work) / n;
  result.efficiency = result.us_per_iter > 0 ? result.bound_us_per_iter / result.us_per_iter : 0;
  return result;
}

}  // namespace swp::detail
