#pragma once
// Engine: the engine core as Pipeline<Ctx> holds it (not for direct use). It owns the core
// (detail/engine_core.hpp) through a pointer and forwards the calls the typed front end makes,
// each out of line (src/engine/engine.cpp), so a user's translation unit that makes a pipeline
// compiles none of the core's internals. The forwarded calls happen per run, per iteration or
// per setting, never per task: one call more on those paths, none on a task's.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/detail/front_end.hpp"
#include "swp/engine/detail/release_policy.hpp"
#include "swp/engine/engine_timeouts.hpp"
#include "swp/engine/failure_policy.hpp"

namespace swp {

class Runtime;
class Stream;
class StopSignal;
class TaskObserver;

namespace detail {

class EngineCore;
class TaskRoutine;

/// The engine core behind a pipeline: see EngineCore (detail/engine_core.hpp), whose members
/// of the same names these forward to, for what each does, its errors and its threads.
class Engine {
 public:
  Engine(Runtime& runtime, PlanGraph graph, ReleasePolicy::Make release, std::size_t slots,
         FrontEnd& front);
  /// Destroys the core, which drains what is in flight first (EngineCore::~EngineCore).
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// How many contexts a front end for `depth` keeps: one per sync entry, so the context of
  /// the iteration retired last stays intact until the next retirement (results read from it
  /// after progress()/next() returned), while `depth` newer iterations run.
  static constexpr std::size_t context_slots(std::size_t depth) noexcept { return depth + 1; }

  [[nodiscard]] EngineCore& core() noexcept { return *core_; }
  [[nodiscard]] const EngineCore& core() const noexcept { return *core_; }

  void set_routine(TaskIndex task, const TaskRoutine* routine) noexcept;
  void check_fillable();
  /// What a callable of TaskScope::enqueue threw and nothing reported yet, as its task's
  /// TaskError (the first one); for after the streams were synchronized.
  void throw_host_work_error();
  void fill();
  std::optional<std::int64_t> progress();
  std::int64_t retire_all();
  Co<std::optional<std::int64_t>> next(const StopSignal* abandon = nullptr);
  Co<std::optional<std::int64_t>> next(std::stop_token token);
  void drain();
  void shut_down() noexcept;
  bool cancel(const std::string& reason);
  /// A serial run (begin_serial_run .. end_serial_run) for its scope.
  class SerialRun {
   public:
    SerialRun(Engine& engine, const char* call);
    ~SerialRun();
    SerialRun(const SerialRun&) = delete;
    SerialRun& operator=(const SerialRun&) = delete;

   private:
    Engine& engine_;
  };
  void await_serial_slot(std::int64_t iter);
  void run_serial(std::int64_t iter);

  [[nodiscard]] bool filled() const noexcept;
  void require_between_runs(const char* call) const;
  [[nodiscard]] std::int64_t next_iteration() const noexcept;
  [[nodiscard]] const PlanGraph& graph() const noexcept;
  [[nodiscard]] Runtime& runtime() noexcept;
  [[nodiscard]] std::size_t depth() const noexcept;
  [[nodiscard]] const std::vector<TaskIndex>& serial_order() const noexcept;
  [[nodiscard]] Stream& stream_of(TaskIndex task) const noexcept;

  void set_on_run_failed(std::function<void(const std::exception_ptr&)> callback);
  void set_timeouts(EngineTimeouts timeouts);
  void set_failure_policy(FailurePolicy policy);
  [[nodiscard]] FailurePolicy failure_policy() const noexcept;
  void set_retire_after_device(bool on);
  [[nodiscard]] bool retire_after_device() const noexcept;
  void set_observer(TaskObserver* observer);
  [[nodiscard]] TaskObserver* observer() const noexcept;
  bool set_nvtx(bool on);

 private:
  std::unique_ptr<EngineCore> core_;
};

}  // namespace detail
}  // namespace swp
