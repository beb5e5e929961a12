// EngineCore::diagnose: what every unfinished instance of the in-flight iterations waits for,
// the body of PipelineTimeout messages.

#include <sstream>

#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

InstanceState EngineCore::state_at(TaskIndex t, std::int64_t iter) const noexcept {
  if (iter < oldest_) return InstanceState::finished;  // retired
  return sync_of(iter).instances[t]->state.load(std::memory_order_acquire);
}

std::string EngineCore::diagnose() const {
  std::ostringstream out;
  for (std::int64_t iter = oldest_; iter < next_admit_; ++iter) {
    const Sync& sync = sync_of(iter);
    for (TaskIndex t = 0; t < graph_.size(); ++t) {
      const Instance& in = *sync.instances[t];
      const auto state = in.state.load(std::memory_order_acquire);
      if (state == InstanceState::finished) continue;
      out << "\n  " << graph_.name(t) << " (iter " << iter << ") on lane '" << graph_.lane(t)
          << "': ";
      switch (state) {
        case InstanceState::idle: {
          out << "not released yet";
          bool waits = false;  // a producer was named: ", " before the next one
          auto name_wait = [&](TaskIndex d, std::int64_t of) {
            if (state_at(d, of) == InstanceState::finished) return;
            out << (waits ? ", " : ": waits for ") << graph_.name(d) << " (iter " << of << ")";
            waits = true;
          };
          for (TaskIndex d : graph_.intra_deps(t)) name_wait(d, iter);
          if (iter > 0)
            for (TaskIndex d : graph_.inter_deps(t)) name_wait(d, iter - 1);
          release_->explain_unreleased(out, t, iter, waits);
          break;
        }
        case InstanceState::queued:
          out << "queued behind the lane's current task";
          break;
        case InstanceState::dependency:
          out << "waits for " << graph_.name(in.wait_task.load()) << " (iter "
              << in.wait_iter.load() << ")";
          break;
        case InstanceState::turn:
          out << "waits for submission turn " << in.turn << " (sequencer at turn "
              << sequencer_.next() << ")";
          break;
        case InstanceState::running:
          out << "is running its body";
          break;
        case InstanceState::finished:
          break;
      }
    }
  }
  return out.str();
}

}  // namespace swp::detail
