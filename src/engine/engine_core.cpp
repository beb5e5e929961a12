#include "swp/engine/detail/engine_core.hpp"

#include <algorithm>

#include "swp/core/enqueue_order.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::detail {

namespace {

// An error that reached an instance through a dependency, not from its own body.
struct FromDependency {
  std::exception_ptr error;
};

bool is_cancelled(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Cancelled&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

void Instance::start(Lane& lane) noexcept {
  core->routine(*this).start_detached(
      &lane,
      [](void* context, const std::exception_ptr& error) noexcept {
        auto* in = static_cast<Instance*>(context);
        in->core->instance_done(*in, error);
      },
      this, &core->stop_signal(), this);
}

EngineCore::EngineCore(Runtime& runtime, PlanGraph graph, ReleasePolicy policy,
                       std::size_t slots, BodyRunner& bodies)
    : runtime_(runtime),
      graph_(std::move(graph)),
      policy_(policy),
      bodies_(bodies),
      device_waker_(runtime.scheduler()),
      sequencer_(runtime.scheduler()) {
  const std::size_t n = graph_.size();
  for (TaskIndex t = 0; t < n; ++t) {
    lanes_.push_back(&runtime_.lane(graph_.lane(t)));
    streams_.push_back(&runtime_.stream(graph_.stream(t)));
  }
  order_ = enqueue_order(graph_, OrderPolicy::ready_first);
  ordered_rank_.assign(n, -1);
  serial_order_ = graph_.topological_order();
  for (TaskIndex t : serial_order_) {
    if (!graph_.schedule(t).globally_ordered) continue;
    ordered_rank_[t] = static_cast<int>(ordered_tasks_.size());
    ordered_tasks_.push_back(t);
  }
  intra_succ_.resize(n);
  inter_succ_.resize(n);
  for (TaskIndex t = 0; t < n; ++t) {
    for (TaskIndex d : graph_.intra_deps(t)) intra_succ_[d].push_back(t);
    for (TaskIndex d : graph_.inter_deps(t)) inter_succ_[d].push_back(t);
  }
  slots_ = std::vector<Slot>(slots);
  for (auto& slot : slots_) {
    for (TaskIndex t = 0; t < n; ++t) slot.boxes.push_back(bodies_.make_box(t));
  }
  sync_ = std::vector<Sync>(slots + 1);
  for (std::size_t e = 0; e < sync_.size(); ++e) {
    auto& sync = sync_[e];
    sync.generation.assign(n, 0);
    sync.fired.assign(n, false);
    sync.finished.assign(n, false);
    for (TaskIndex t = 0; t < n; ++t) {
      auto in = std::make_unique<Instance>();
      in->core = this;
      in->task = t;
      in->sync = e;
      sync.instances.push_back(std::move(in));
    }
  }
}

EngineCore::~EngineCore() {
  if (filled_ && !broken_) {
    try {
      drain();
    } catch (...) {
      // Destruction cannot report; the error was the caller's to collect via progress().
    }
  }
  // An iteration retires when its instances' counts dropped; their lanes may still be on the
  // way out of instance_done. Wait until the last of them let go of this core.
  if (!broken_) wait_for([&] { return drained(); }, timeouts_.retire);
  // Streams may still hold records and waits that point at this pipeline's events: let them
  // finish before the events go.
  std::vector<Stream*> streams = streams_;
  std::ranges::sort(streams);
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  for (Stream* s : streams) {
    try {
      s->synchronize();
    } catch (...) {
      // A sim stream that can never drain holds nothing that refers to us once it is stuck
      // on a wait; nothing better can be done from a destructor.
    }
  }
}

void EngineCore::reset_run_state() {
  for (auto& sync : sync_) sync.remaining.store(0);
  next_admit_ = 0;
  end_ = INT64_MAX;
  oldest_ = 0;
  next_period_ = 0;
  released_.store(0);
  finished_.store(0);
  next_turn_ = 0;
  ordered_iter_ = 0;
  ordered_pos_ = 0;
  failure_.reset();
  failed_.store(false);
  sequencer_.reset();
  stop_.reset();
}

bool EngineCore::admit(std::int64_t iter) {
  if (!prepare(iter)) return false;
  next_admit_ = iter + 1;
  return true;
}

bool EngineCore::prepare(std::int64_t iter) {
  if (iter >= end_) return false;
  const std::size_t s = slot_index(iter);
  if (!admit_(owner_, iter, s)) {
    end_ = iter;
    return false;
  }
  Slot& slot = slots_[s];
  for (auto& box : slot.boxes)
    if (box) box->reset();
  Sync& sync = sync_of(iter);
  std::fill(sync.generation.begin(), sync.generation.end(), 0);
  std::fill(sync.fired.begin(), sync.fired.end(), false);
  std::fill(sync.finished.begin(), sync.finished.end(), false);
  for (auto& in : sync.instances) {
    in->iter = iter;
    in->slot = s;
    in->stream_used = false;
    in->failed = false;
    in->state.store(InstanceState::idle);
    in->done.reset();
  }
  sync.remaining.store(static_cast<int>(graph_.size()), std::memory_order_seq_cst);
  return true;
}

void EngineCore::release(TaskIndex t, std::int64_t iter) {
  Instance& in = *sync_of(iter).instances[t];
  if (graph_.schedule(t).globally_ordered) in.turn = next_turn_++;
  in.state.store(InstanceState::queued, std::memory_order_relaxed);
  released_.fetch_add(1, std::memory_order_relaxed);
  if (observer_ != nullptr) observer_->task_released(t, iter, *lanes_[t]);
  lanes_[t]->submit(in);
}

void EngineCore::fill(Admit admit, Retire retire, void* owner) {
  if (broken_) throw PipelineStateError("the pipeline is broken: an earlier timeout could not drain it");
  if (filled_) throw PipelineStateError("fill_pipeline called twice without drain()");
  reset_run_state();
  admit_ = admit;
  retire_ = retire;
  owner_ = owner;
  filled_ = true;
  if (policy_ == ReleasePolicy::clock) {
    for (std::size_t p = 0; p < slots_.size(); ++p) open_period(next_period_++);
  } else {
    advance();
  }
}

void EngineCore::open_period(std::int64_t period) {
  // Tasks of iterations already in flight go first, in the period's enqueue order; the new
  // iteration needs its slot, which may still wait for its previous occupant's device work.
  // Deferring stage-0 tasks keeps the order topological: nothing else in this period depends
  // on the new iteration.
  for (TaskIndex t : order_) {
    const std::int64_t iter = period - graph_.stage(t);
    if (iter >= oldest_ && iter < period && iter < next_admit_) release(t, iter);
  }
  if (period >= end_ || period != next_admit_) return;
  if (!await_slot(period) || !admit(period)) return;
  for (TaskIndex t : order_)
    if (graph_.stage(t) == 0) release(t, period);
}

bool EngineCore::device_done(std::int64_t iter) const {
  const Sync& sync = sync_of(iter);
  for (TaskIndex t = 0; t < graph_.size(); ++t) {
    const auto generation = sync.generation[t];
    if (generation != 0 && !sync.instances[t]->event.reached(generation)) return false;
  }
  return true;
}

void EngineCore::watch_device(std::int64_t iter) {
  Sync& sync = sync_of(iter);
  for (TaskIndex t = 0; t < graph_.size(); ++t) {
    const auto generation = sync.generation[t];
    if (generation != 0) sync.instances[t]->event.add_waiter(generation, device_waker_);
  }
}

void EngineCore::unwatch_device(std::int64_t iter) {
  Sync& sync = sync_of(iter);
  for (TaskIndex t = 0; t < graph_.size(); ++t) sync.instances[t]->event.remove_waiter(device_waker_);
}

bool EngineCore::await_slot(std::int64_t iter) {
  const auto slots = static_cast<std::int64_t>(slots_.size());
  if (iter < slots) return true;
  const std::int64_t previous = iter - slots;
  if (device_done(previous)) return true;
  // Decision 8: a context slot is reused only once its previous occupant's device work is
  // complete, so the CPU may write the new batch into it. This is also the engines'
  // back-pressure from the device: the CPU runs at most `slots` iterations ahead of it.
  // The waker is a member, not a local: a stream may still be calling it after the wait below
  // has seen the events complete.
  watch_device(previous);
  const bool done = wait_for([&] { return device_done(previous); }, timeouts_.retire);
  unwatch_device(previous);
  if (!done) fail("", iter, std::make_exception_ptr(slot_timeout(iter)), true);
  return done;
}

PipelineTimeout EngineCore::slot_timeout(std::int64_t iter) const {
  const std::int64_t previous = iter - static_cast<std::int64_t>(slots_.size());
  return PipelineTimeout("device work of iteration " + std::to_string(previous) +
                         " did not complete within " + std::to_string(timeouts_.retire.count()) +
                         " ms, so iteration " + std::to_string(iter) + " cannot have its slot");
}

void EngineCore::advance() {
  const auto slots = static_cast<std::int64_t>(slots_.size());
  for (;;) {
    // next_admit_ and oldest_ are written by this (the caller's) thread only, under the lock.
    const std::int64_t iter = next_admit_;
    if (failed_.load(std::memory_order_acquire) || iter - oldest_ >= slots || iter >= end_) break;
    if (!await_slot(iter)) return;
    // The user's source runs unlocked: lanes keep firing meanwhile. The entry being prepared
    // is invisible to them until next_admit_ moves.
    if (!prepare(iter)) break;
    std::lock_guard lock(fire_mutex_);
    next_admit_ = iter + 1;
    for (TaskIndex t = 0; t < graph_.size(); ++t) try_fire(t, iter);
    fire_ordered();
  }
}

bool EngineCore::try_fire(TaskIndex t, std::int64_t iter) {
  if (failure_ || iter < oldest_ || iter >= next_admit_) return false;
  Sync& sync = sync_of(iter);
  if (sync.fired[t]) return false;
  for (TaskIndex d : graph_.intra_deps(t))
    if (!sync.finished[d]) return false;
  if (iter > oldest_) {  // an inter dep on a retired iteration is satisfied
    Sync& prev = sync_of(iter - 1);
    for (TaskIndex d : graph_.inter_deps(t))
      if (!prev.finished[d]) return false;
  }
  if (ordered_rank_[t] >= 0) {
    // Globally ordered instances are released in (iteration, rank) order, so turns are handed
    // out in the same order on every rank and no lane holds a later turn ahead of an earlier.
    if (iter != ordered_iter_ || ordered_tasks_[ordered_pos_] != t) return false;
    if (++ordered_pos_ == ordered_tasks_.size()) {
      ordered_pos_ = 0;
      ++ordered_iter_;
    }
  }
  sync.fired[t] = true;
  release(t, iter);
  return true;
}

void EngineCore::fire_ordered() {
  while (!ordered_tasks_.empty() && ordered_iter_ < next_admit_ &&
         try_fire(ordered_tasks_[ordered_pos_], ordered_iter_)) {
  }
}


void EngineCore::record_dep_wait(Instance& in, TaskIndex dep, std::int64_t iter) {
  in.wait_task.store(dep, std::memory_order_relaxed);
  in.wait_iter.store(iter, std::memory_order_relaxed);
  in.state.store(InstanceState::dependency, std::memory_order_release);
  if (observer_ != nullptr)
    observer_->task_waiting(in.task, in.iter, *lanes_[in.task],
                            TaskWait{TaskWait::Kind::dependency, dep, iter});
}

Co<void> EngineCore::routine(Instance& in) {
  const TaskIndex t = in.task;
  const std::int64_t iter = in.iter;
  Sync& sync = sync_[in.sync];
  Stream& stream = *streams_[t];
  // Whether consumers need an event from this instance: it queued device work or waits, or a
  // dependency handed it device work that consumers on other streams must also wait for.
  bool carries_device_work = false;
  std::exception_ptr own_error;
  std::exception_ptr dep_error;

  try {
    if (stop_.stop_requested()) throw Cancelled(stop_.reason());
    // Phase 1 (CPU: the producer was submitted), then phase 2 (this stream waits for the
    // producer's event when the streams differ). Intra deps are of this iteration, inter deps
    // of the previous one, whose sync entry stays intact until this iteration retires.
    const auto intra = graph_.intra_deps(t);
    const auto inter = iter > 0 ? graph_.inter_deps(t) : std::span<const TaskIndex>{};
    for (std::size_t k = 0; k < intra.size() + inter.size(); ++k) {
      const bool same_iter = k < intra.size();
      const TaskIndex d = same_iter ? intra[k] : inter[k - intra.size()];
      Sync& producer_sync = same_iter ? sync : sync_of(iter - 1);
      Instance& dep = *producer_sync.instances[d];
      if (!dep.done_future.ready()) {
        record_dep_wait(in, d, same_iter ? iter : iter - 1);
        try {
          co_await dep.done_future;
        } catch (const Cancelled&) {
          throw;
        } catch (...) {
          throw FromDependency{std::current_exception()};
        }
      } else if (dep.failed) {
        throw FromDependency{dep.done_future.error_ptr()};
      }
      const auto generation = producer_sync.generation[d];
      if (generation == 0) continue;
      carries_device_work = true;
      if (streams_[d] != &stream) stream.wait(dep.event, generation);
    }
    if (graph_.schedule(t).globally_ordered) {
      in.state.store(InstanceState::turn, std::memory_order_release);
      if (observer_ != nullptr && sequencer_.next() != in.turn)  // only a real wait
        observer_->task_waiting(t, iter, *lanes_[t], TaskWait{TaskWait::Kind::turn, t, iter});
      co_await sequencer_.turn(in.turn, graph_.name(t) + " (iter " + std::to_string(iter) + ")");
    }
    in.state.store(InstanceState::running, std::memory_order_release);
    if (observer_ != nullptr) observer_->task_started(t, iter, *lanes_[t]);
    TaskScope scope(*this, in, stream);
    Co<void> body = bodies_.run_body(t, in.slot, scope);
    if (body.valid()) co_await std::move(body);  // invalid: a body with nothing to do
  } catch (const FromDependency& e) {
    dep_error = e.error;
  } catch (...) {
    own_error = std::current_exception();
  }

  // Submission is over (or failed): publish the device point consumers must wait for.
  if (in.stream_used || carries_device_work) {
    const auto generation = stream.record(in.event);
    sync.generation[t] = generation;
    in.done.set_event(&in.event, generation);
  }
  if (graph_.schedule(t).globally_ordered && in.state.load() == InstanceState::running)
    sequencer_.advance();  // this instance held its turn: pass it on, even after a failure

  if (own_error && !is_cancelled(own_error)) fail(graph_.name(t), iter, own_error, false);
  in.failed = own_error || dep_error;
  // Observed before the promise completes: whoever the completion wakes starts after this.
  if (observer_ != nullptr) observer_->task_finished(t, iter, *lanes_[t], !in.failed);
  if (in.failed) {
    in.done.set_error(own_error ? own_error : dep_error);
  } else {
    in.done.set_value();
  }
}

void EngineCore::instance_done(Instance& in, const std::exception_ptr& error) noexcept {
  lanes_[in.task]->finish_job();
  if (error) fail(graph_.name(in.task), in.iter, error, false);  // the routine itself failed
  in.state.store(InstanceState::finished, std::memory_order_release);
  Sync& sync = sync_[in.sync];
  if (policy_ == ReleasePolicy::data_flow) {
    std::lock_guard lock(fire_mutex_);
    sync.finished[in.task] = true;
    for (TaskIndex s : intra_succ_[in.task]) try_fire(s, in.iter);
    for (TaskIndex s : inter_succ_[in.task]) try_fire(s, in.iter + 1);
    fire_ordered();
  }
  // After these decrements the caller may retire the iteration and even destroy the pipeline:
  // touch nothing of `this` afterwards (the scheduler belongs to the runtime, which outlives it).
  // finished_ goes last: the destructor and the drain after a failure wait for it, so once it
  // counts this instance, no lane touches the core anymore.
  Scheduler& scheduler = runtime_.scheduler();
  sync.remaining.fetch_sub(1, std::memory_order_seq_cst);
  finished_.fetch_add(1, std::memory_order_seq_cst);
  scheduler.notify();
}

void EngineCore::fail(const std::string& task, std::int64_t iter, std::exception_ptr error,
                      bool timeout) {
  std::string reason;
  {
    std::lock_guard lock(fire_mutex_);
    if (failure_) return;  // the first root cause wins
    failure_ = Failure{task, iter, error, timeout};
    failed_.store(true, std::memory_order_release);
    reason = timeout ? "pipeline timed out" : "task '" + task + "' failed in iteration " +
                                                  std::to_string(iter);
  }
  // Wake every cancellable wait (dependencies, turns): the run drains instead of hanging.
  stop_.request_stop(reason);
  runtime_.scheduler().notify();
}

}  // namespace swp::detail
