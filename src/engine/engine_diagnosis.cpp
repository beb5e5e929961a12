// EngineCore::diagnose: what every unfinished instance of the in-flight iterations waits for,
// the body of PipelineTimeout messages; the fatal error of a teardown under running bodies.

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

std::string EngineCore::diagnose() const {
  std::ostringstream out;
  auto state_of = [&](TaskIndex t, std::int64_t iter) {
    if (iter < oldest_) return InstanceState::finished;  // retired
    return sync_[static_cast<std::size_t>(iter) % sync_.size()].instances[t]->state.load(
        std::memory_order_acquire);
  };
  for (std::int64_t iter = oldest_; iter < next_admit_; ++iter) {
    const Sync& sync = sync_[static_cast<std::size_t>(iter) % sync_.size()];
    for (TaskIndex t = 0; t < graph_.size(); ++t) {
      const Instance& in = *sync.instances[t];
      const auto state = in.state.load(std::memory_order_acquire);
      if (state == InstanceState::finished) continue;
      out << "\n  " << graph_.name(t) << " (iter " << iter << ") on lane '" << graph_.lane(t)
          << "': ";
      switch (state) {
        case InstanceState::idle: {
          out << "not released yet";
          const char* sep = ": waits for ";
          for (TaskIndex d : graph_.intra_deps(t))
            if (state_of(d, iter) != InstanceState::finished) {
              out << sep << graph_.name(d) << " (iter " << iter << ")";
              sep = ", ";
            }
          if (iter > 0)
            for (TaskIndex d : graph_.inter_deps(t))
              if (state_of(d, iter - 1) != InstanceState::finished) {
                out << sep << graph_.name(d) << " (iter " << iter - 1 << ")";
                sep = ", ";
              }
          // Data-flow: an ordered instance also waits for the ordered one before it.
          if (policy_ == ReleasePolicy::data_flow && info_[t].ordered) {
            const auto rank = static_cast<std::size_t>(info_[t].ordered_rank);
            const TaskIndex before = rank > 0 ? ordered_tasks_[rank - 1] : ordered_tasks_.back();
            const std::int64_t before_iter = rank > 0 ? iter : iter - 1;
            if (before_iter >= 0 && state_of(before, before_iter) != InstanceState::finished) {
              out << sep << graph_.name(before) << " (iter " << before_iter
                  << ", globally ordered before it)";
              sep = ", ";
            }
          }
          if (policy_ == ReleasePolicy::clock && *sep == ':')
            out << " (its period " << iter + graph_.stage(t) << " has not opened)";
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

void EngineCore::die_undrained() const noexcept {
  const std::string report =
      "swp: fatal: a pipeline is destroyed while its task bodies still run: they ignored "
      "cancellation and did not return within " +
      std::to_string(timeouts_.drain.count()) +
      " ms (the drain deadline), and freeing the pipeline would let them write into freed "
      "memory when they do. Still unfinished:" +
      diagnose();
  std::fprintf(stderr, "%s\n", report.c_str());
  std::abort();
}

}  // namespace swp::detail
