// HangReport: what every unfinished instance of the in-flight iterations waits for (the body of
// PipelineTimeout messages), the device work a context slot waits for, the optional report
// file, and the fatal error of a teardown under running bodies.

#include "swp/engine/detail/hang_report.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

namespace {

// Where hang reports are appended: the pipeline's setting, else $SWP_HANG_REPORT, else none.
std::string report_path(const EngineTimeouts& timeouts) {
  if (!timeouts.hang_report.empty()) return timeouts.hang_report;
  const char* env = std::getenv("SWP_HANG_REPORT");
  return env != nullptr ? env : "";
}

// Appends `report` to the report file; returns a note for the message when that failed.
std::string write_report(const EngineTimeouts& timeouts, const std::string& report) {
  const std::string path = report_path(timeouts);
  if (path.empty()) return "";
  std::ofstream out(path, std::ios::app);
  out << "swp hang report (process " << ::getpid() << "):\n" << report << "\n\n";
  out.flush();
  if (out) return "";
  return "\n(the hang report could not be written to '" + path + "')";
}

}  // namespace

std::optional<std::pair<TaskIndex, std::int64_t>> HangReport::unfinished_producer(
    TaskIndex t, std::int64_t iter) const noexcept {
  // By the states of the producers' own iterations: an iteration retired finished them all,
  // and its entry is not reused while (t, iter) is in flight.
  const auto finished = [&](TaskIndex d, std::int64_t of) {
    return core_.sync_of(of).instances[d].state_in(of) == InstanceState::finished;
  };
  for (TaskIndex d : core_.tasks_[t].intra)
    if (!finished(d, iter)) return std::pair{d, iter};
  if (iter > core_.base_)
    for (TaskIndex d : core_.tasks_[t].inter)
      if (!finished(d, iter - 1)) return std::pair{d, iter - 1};
  return std::nullopt;
}

std::string HangReport::unfinished() const {
  const PlanGraph& graph = core_.graph_;
  std::ostringstream out;
  auto instance = [&](TaskIndex t, std::int64_t iter) -> const Instance& {
    return core_.sync_of(iter).instances[t];
  };
  // The in-flight instance that holds `lane` (waits there or runs its body), if one of ours.
  auto holder_of_lane = [&](const Lane* lane) -> const Instance* {
    for (std::int64_t iter = core_.oldest_; iter < core_.next_admit_; ++iter)
      for (TaskIndex t = 0; t < graph.size(); ++t) {
        const auto state = core_.state_at(t, iter);
        if (core_.tasks_[t].lane == lane &&
            (state == InstanceState::dependency || state == InstanceState::turn ||
             state == InstanceState::running || state == InstanceState::coroutine))
          return &instance(t, iter);
      }
    return nullptr;
  };
  // The in-flight ordered instance holding sequencer turn `turn` (its state was published
  // after its turn was set: only those that reached their lane are looked at).
  auto holder_of_turn = [&](std::uint64_t turn) -> const Instance* {
    for (std::int64_t iter = core_.oldest_; iter < core_.next_admit_; ++iter)
      for (TaskIndex t = 0; t < graph.size(); ++t) {
        const auto state = core_.state_at(t, iter);
        if (core_.tasks_[t].ordered && state != InstanceState::idle &&
            state != InstanceState::queued && state != InstanceState::finished &&
            instance(t, iter).turn() == turn)
          return &instance(t, iter);
      }
    return nullptr;
  };
  for (std::int64_t iter = core_.oldest_; iter < core_.next_admit_; ++iter) {
    for (TaskIndex t = 0; t < graph.size(); ++t) {
      const Instance& in = instance(t, iter);
      const auto state = in.state_in(iter);
      if (state == InstanceState::finished) continue;
      out << "\n  " << graph.name(t) << " (iter " << iter << ") on lane '" << graph.lane(t)
          << "', stream '" << graph.stream(t) << "': ";
      switch (state) {
        case InstanceState::idle: {
          out << "not released yet";
          bool waits = false;  // a producer was named: ", " before the next one
          auto name_wait = [&](TaskIndex d, std::int64_t of) {
            if (core_.state_at(d, of) == InstanceState::finished) return;
            out << (waits ? ", " : ": waits for ") << graph.name(d) << " (iter " << of << ")";
            waits = true;
          };
          for (TaskIndex d : graph.intra_deps(t)) name_wait(d, iter);
          if (iter > core_.base_) {
            for (TaskIndex d : graph.inter_deps(t)) name_wait(d, iter - 1);
            // The lane edge (data-flow's counter; the clock releases with the period).
            if (core_.tasks_[t].lane_edge && core_.start_proceeds_) name_wait(t, iter - 1);
          }
          core_.release_->explain_unreleased(out, t, iter, waits);
          break;
        }
        case InstanceState::queued: {
          if (in.bypassed.load(std::memory_order_relaxed)) {
            // Released under its lane's claim: behind its instance before (the clock releases
            // it with its period), holding its lane for a producer still running (the clock
            // again, once the instance before finished), or waiting for a thread to run it.
            if (iter > core_.base_ && core_.state_at(t, iter - 1) != InstanceState::finished) {
              out << "queued on its lane behind " << graph.name(t) << " (iter " << iter - 1 << ")";
            } else if (const auto producer = unfinished_producer(t, iter)) {
              out << "holds its lane and waits for " << graph.name(producer->first) << " (iter "
                  << producer->second << ")";
            } else {
              out << "waits for a thread (its lane is claimed for its task)";
            }
          } else if (const Instance* holder = holder_of_lane(core_.tasks_[t].lane)) {
            out << "queued on its lane behind " << graph.name(holder->task()) << " (iter "
                << holder->iter() << ")";
          } else {
            out << "queued behind the lane's current job";
          }
          break;
        }
        case InstanceState::dependency: {
          if (const auto waits = in.waits_for()) {
            out << "holds its lane and waits for " << graph.name(waits->first) << " (iter "
                << waits->second << ")";
          } else {
            out << "held its lane waiting for a dependency, and has moved on since";
          }
          break;
        }
        case InstanceState::turn: {
          const std::uint64_t next = core_.sequencer_.next();
          out << "waits for submission turn " << in.turn() << " (sequencer at turn " << next;
          if (const Instance* holder = holder_of_turn(next))
            out << ", held by " << graph.name(holder->task()) << " (iter " << holder->iter() << ")";
          out << ")";
          break;
        }
        case InstanceState::running:
          // Released under its lane's claim: it runs as a runnable of its own, not on the lane.
          if (in.bypassed.load(std::memory_order_relaxed)) {
            out << "is running its body";
            break;
          }
          [[fallthrough]];
        case InstanceState::coroutine:
          // The instance holds its lane, so the lane's current job (or, under a claim, the
          // coroutine continuing on it) is this one.
          switch (core_.tasks_[t].lane->activity()) {
            case Lane::Activity::running:
              out << "is running its body";
              break;
            case Lane::Activity::resumable:
              out << "its body is suspended and about to resume (its continuation is queued "
                     "on the lane)";
              break;
            case Lane::Activity::suspended:
              out << "its body is suspended in an await (a future, an event, CPU or device "
                     "time) that has not completed";
              break;
            case Lane::Activity::idle:
              out << "is finishing";
              break;
          }
          break;
        case InstanceState::finished:
          break;
      }
    }
  }
  // The source's fetch of the next batch, running in the background (an awaitable source or
  // a channel receive that suspended).
  if (!core_.front_.source_idle()) {
    out << "\n  the source's fetch of the batch for iteration " << core_.next_admit_ << ": ";
    if (core_.source_stopped_) {
      out << "cancelled as the run ended, it has not returned: it is suspended in an await "
             "that ignores cancellation";
    } else {
      out << "it is suspended in an await that has not completed";
    }
  }
  return out.str();
}

std::string HangReport::serial_unfinished(TaskIndex t, std::int64_t iter) const {
  // The serial body runs on the driving thread, not on its lane: while the driver waits, it
  // is suspended in an await.
  return "\n  " + core_.graph_.name(t) + " (iter " + std::to_string(iter) + ") on lane '" +
         core_.graph_.lane(t) +
         "', stream 'default': its body is suspended in an await (a future, an event, CPU or "
         "device time) that has not completed";
}

std::string HangReport::device_work(std::int64_t iter) const {
  const PlanGraph& graph = core_.graph_;
  std::ostringstream out;
  const IterationSync& sync = core_.sync_of(iter);
  for (TaskIndex t = 0; t < graph.size(); ++t) {
    const auto generation = sync.generation[t];
    if (generation != 0 && !sync.instances[t].device()->event->reached(generation))
      out << "\n  " << graph.name(t) << " (iter " << iter << ") on stream '" << graph.stream(t)
          << "': its device work has not completed";
  }
  return out.str();
}

PipelineTimeout HangReport::error(const std::string& report) const {
  return PipelineTimeout(report + write_report(core_.timeouts_, report));
}

void HangReport::die_undrained(const std::string& cannot_wait) const noexcept {
  const bool bodies = !core_.release_->drained();
  const bool fetch = !core_.front_.source_idle();
  const std::string what = bodies && fetch
                               ? "its task bodies and its source's fetch still run: they"
                           : fetch ? "its source's fetch still runs: it"
                                   : "its task bodies still run: they";
  const std::string why = cannot_wait.empty() ? " ignored cancellation and did not return within " +
                                                    std::to_string(core_.timeouts_.drain.count()) +
                                                    " ms (the drain deadline)"
                                              : " cannot be waited for: " + cannot_wait;
  const std::string report =
      "swp: fatal: a pipeline is destroyed while " + what + why +
      ", and freeing the pipeline would let them write into freed memory when they do. Still "
      "unfinished:" +
      unfinished();
  std::fprintf(stderr, "%s%s\n", report.c_str(), write_report(core_.timeouts_, report).c_str());
  std::abort();
}

}  // namespace swp::detail
