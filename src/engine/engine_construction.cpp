// EngineCore: building the core from a plan graph — each task's TaskInfo, the lane claims, the
// successor lists and join counts, the context slots, the sync entries and their instances —
// and tearing it down once nothing of a run refers to it.

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
      sequencer_(runtime.scheduler()) {
  const std::size_t n = graph_.size();
  // An instance keeps its task in 31 bits (see TaskInfo::task and Instance::waits_for).
  if (n >= std::size_t{1} << 31)
    throw std::length_error("a pipeline runs at most 2^31 - 1 tasks; the plan has " +
                            std::to_string(n));
  info_.resize(n);
  streams_.reserve(graph_.streams().size());
  for (std::size_t s = 0; s < graph_.streams().size(); ++s)
    streams_.push_back(&runtime_.stream(graph_.streams()[s], graph_.priority_of_stream(s)));
  // Each distinct lane and stream resolved once (Runtime::lane and ::stream lock and look up
  // by name), and how many tasks each lane has (a task alone on its lane has a lane edge).
  std::vector<Lane*> lanes;
  lanes.reserve(graph_.lanes().size());
  for (const std::string& name : graph_.lanes()) lanes.push_back(&runtime_.lane(name));
  std::vector<int> tasks_on_lane(lanes.size(), 0);
  for (TaskIndex t = 0; t < n; ++t) {
    info_[t].task = static_cast<std::uint32_t>(t);
    info_[t].lane = lanes[graph_.lane_index(t)];
    ++tasks_on_lane[graph_.lane_index(t)];
    info_[t].stream = streams_[graph_.stream_index(t)];
    info_[t].ordered = graph_.schedule(t).globally_ordered;
    info_[t].intra = graph_.intra_deps(t);
    info_[t].inter = graph_.inter_deps(t);
    info_[t].proceeds_guarded = info_[t].ordered || !info_[t].inter.empty();
  }
  serial_order_ = graph_.topological_order();
  // Lane edges (see LaneClaim) before the policy is made: data-flow's admission counts them.
  for (TaskIndex t = 0; t < n; ++t) {
    if (!fast_.lane_claims || info_[t].ordered || tasks_on_lane[graph_.lane_index(t)] != 1)
      continue;
    info_[t].claim = &claims_.add(sync_, t, *info_[t].lane);
  }
  // Before the counters are armed: the policy says what they count besides dependencies.
  release_ = release(*this);
  start_proceeds_ = release_->start_proceeds();
  retires_undriven_ = release_->retires_undriven();
  intra_succ_ = SuccessorLists(n, [this](TaskIndex t) { return graph_.intra_deps(t); });
  inter_succ_ = SuccessorLists(n, [this](TaskIndex t) { return graph_.inter_deps(t); });
  for (TaskIndex t = 0; t < n; ++t) {
    info_[t].intra_succ = intra_succ_[t];
    info_[t].inter_succ = inter_succ_[t];
    info_[t].degree_first = in_degree(t, 0);
    info_[t].degree = in_degree(t, 1);
    info_[t].counts_completion =
        !release_->releases_every_instance() || info_[t].intra_succ.empty();
    if (info_[t].counts_completion) ++completion_count_;
  }
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
  for (TaskInfo& info : info_)
    info.in_place = info.claim != nullptr && &info.lane->scheduler() == &runtime_.scheduler();
  uncounted().plan(serial_order_, info_);
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
      in.info = &info_[t];
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
  for (Stream* s : streams_) {
    try {
      s->synchronize();
    } catch (...) {
      // A sim stream that can never drain holds nothing that refers to us once it is stuck
      // on a wait; nothing better can be done from a destructor.
    }
  }
}

void EngineCore::shut_down() noexcept {
  if (filled_ && !broken_) {
    try {
      // Not drain(): on a thread of the lanes' io_context it would be refused; here, the
      // last resort, the wait runs that context's handlers meanwhile (AsioScheduler).
      driver_.end_run();
    } catch (...) {
      // Destruction cannot report; the error was the caller's to collect via progress().
    }
  }
  // An iteration retires when its instances' counts dropped; their lanes may still be on the
  // way out of finish(). Wait until the last of them let go of this core. After a run that
  // could not drain (broken), bodies that ignored cancellation still run, and will write
  // into this core and the front end's contexts when they return: they must not be freed
  // under them. Waiting has a deadline (drain) like every wait; past it the process ends
  // loudly.
  if (!driver_.wait_drained()) hang_report().die_undrained();
  claims_.end_all();  // nothing of this run holds a lane now
}

int EngineCore::in_degree(TaskIndex t, std::int64_t iter) const noexcept {
  const TaskInfo& info = info_[t];
  int n = static_cast<int>(info.intra.size());
  if (iter > 0) n += static_cast<int>(info.inter.size());
  // The lane edge (see LaneClaim).
  if (iter > 0 && info.claim != nullptr) ++n;
  return n + release_->extra_degree(t, iter);
}

}  // namespace swp::detail
