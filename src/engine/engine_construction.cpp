// EngineCore: building the core from a plan graph — its task table (TaskTable), the lane
// claims, the release policy, the context slots, the sync entries and their instances — and
// tearing it down once nothing of a run refers to it.

#include "swp/engine/detail/engine_core.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "swp/engine/task_scope.hpp"

namespace swp::detail {

EngineCore::EngineCore(Runtime& runtime, PlanGraph graph, ReleasePolicy::Make release,
                       std::size_t slots, FrontEnd& front)
    : IterationDeviceWork(runtime.scheduler()),
      runtime_(runtime),
      run_queue_(run_queue_hooks_of(runtime.scheduler())),
      fast_(runtime.fast_paths()),
      graph_(std::move(graph)),
      front_(front),
      tasks_(graph_, runtime),
      sequencer_(runtime.scheduler()) {
  const std::size_t n = graph_.size();
  // Lane edges and claims (see LaneClaim) before the policy is made: data-flow's admission
  // counts them. Globally ordered tasks have the ordered chain instead.
  for (TaskIndex t = 0; t < n; ++t) {
    TaskInfo& info = tasks_[t];
    if (!fast_.lane_claims || info.ordered) continue;
    info.lane_edge = true;
    if (!tasks_.alone_on_lane(t)) continue;
    info.claim = &claims_.add(sync_, t, *info.lane);
    info.in_place = &info.lane->scheduler() == &runtime_.scheduler();
  }
  // Before the counters are armed: the policy says what they count besides dependencies.
  release_ = release(*this);
  start_proceeds_ = release_->start_proceeds();
  retires_undriven_ = release_->retires_undriven();
  tasks_.count_joins(*release_);
  depth_ = slots;
  slots_ = std::vector<ContextSlot>(Engine::context_slots(slots));
  slot_ring_ = RingIndex(slots_.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    ContextSlot& slot = slots_[s];
    slot.context = front_.context(s);
    slot.boxes.reserve(n);
    for (TaskIndex t = 0; t < n; ++t) {
      slot.boxes.push_back(front_.make_output(t));
      if (slot.boxes.back()) slot.boxed.push_back(t);
    }
  }
  sync_ = std::vector<Sync>(slots + 1);
  sync_ring_ = RingIndex(sync_.size());
  uncounted().plan(tasks_.serial_order(), tasks_.all());
  static_assert(std::is_trivially_destructible_v<TaskScope>, "scopes_ is freed as bytes");
  static_assert(alignof(TaskScope) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  scopes_ = std::make_unique_for_overwrite<std::byte[]>(sync_.size() * n * sizeof(TaskScope));
  TaskScope* const scopes = reinterpret_cast<TaskScope*>(scopes_.get());
  // Every entry's storage exists before any instance is made, and each instance is made and
  // filled in at once (its lane-edge successor, `after`, is in the next entry): a plan of
  // 100,000 tasks has tens of megabytes of them, and every pass over them is a pass through
  // memory.
  for (std::size_t e = 0; e < sync_.size(); ++e) {
    Sync& sync = sync_[e];
    sync.core = this;
    sync.previous = &sync_[(e + sync_.size() - 1) % sync_.size()];
    sync.next = &sync_[(e + 1) % sync_.size()];
    sync.instances = InstanceArray(n);
    sync.scopes = scopes + e * n;
    sync.cold = std::make_unique<InstanceCold[]>(n);
  }
  for (std::size_t e = 0; e < sync_.size(); ++e) {
    Sync& sync = sync_[e];
    sync.generation.assign(n, 0);
    sync.recorded = std::make_unique_for_overwrite<TaskIndex[]>(n);
    for (TaskIndex t = 0; t < n; ++t) {
      Instance& in = sync.instances.emplace();
      in.info = &tasks_[t];
      in.sync = &sync;
      // Its constructor is private (friend: the core).
      ::new (&sync.scopes[t]) TaskScope(in);
    }
  }
}

EngineCore::~EngineCore() {
  shut_down();
  // Streams may still hold records and waits that point at this pipeline's events: let them
  // finish before the events go.
  for (Stream* s : tasks_.streams()) {
    try {
      s->synchronize();
    } catch (...) {
      // A sim stream that can never drain holds nothing that refers to us once it is stuck
      // on a wait; nothing better can be done from a destructor.
    }
  }
}

void EngineCore::shut_down() noexcept {
  // The end of the run below already waited out the drain deadline (it broke the pipeline):
  // the teardown has one, so what still runs then is fatal at once.
  bool drain_spent = false;
  if (filled_ && !broken_) {
    try {
      // Not drain(): on a thread of the lanes' io_context it would be refused; here, the
      // last resort, the wait runs that context's handlers meanwhile (AsioScheduler).
      driver_.end_run();
    } catch (...) {
      // Destruction cannot report; the error was the caller's to collect via progress().
      drain_spent = broken_;
    }
  }
  // An iteration retires when its instances' counts dropped; their lanes may still be on the
  // way out of finish(). Wait until the last of them let go of this core. After a run that
  // could not drain (broken), bodies that ignored cancellation still run, and will write
  // into this core and the front end's contexts when they return: they must not be freed
  // under them. Waiting has a deadline (drain) like every wait; past it the process ends
  // loudly. A wait that cannot run at all (an AsioScheduler on a thread of its stopped
  // io_context, whose handlers nothing runs any more) is a drain that cannot finish.
  try {
    if (!(drain_spent ? drained() : driver_.wait_drained())) hang_report().die_undrained();
  } catch (const std::exception& e) {
    hang_report().die_undrained(e.what());
  } catch (...) {
    hang_report().die_undrained("an unknown exception");
  }
  claims_.end_all();  // nothing of this run holds a lane now
  if (broken_) {
    // What a fetch that outlived its broken run brought goes back before the pipeline goes.
    // Once: the core's own destructor calls this again, after the front end is gone.
    broken_ = false;
    try {
      hand_back_late_batch();
    } catch (...) {
      // Destruction cannot report what on_failure threw.
    }
  }
}

}  // namespace swp::detail
