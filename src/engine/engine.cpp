// Engine: the pipeline's handle on its engine core, each call forwarded (detail/engine.hpp).

#include "swp/engine/detail/engine.hpp"

#include <utility>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/detail/serial_iteration.hpp"

namespace swp::detail {

Engine::Engine(Runtime& runtime, PlanGraph graph, ReleasePolicy::Make release, std::size_t slots,
               FrontEnd& front)
    : core_(std::make_unique<EngineCore>(runtime, std::move(graph), release, slots, front)) {}

Engine::~Engine() = default;

void Engine::set_routine(TaskIndex task, const TaskRoutine* routine) noexcept {
  core_->set_routine(task, routine);
}
void Engine::check_fillable() { core_->check_fillable(); }
void Engine::throw_host_work_error() { core_->throw_host_work_error(); }
void Engine::fill() { core_->fill(); }
std::optional<std::int64_t> Engine::progress() { return core_->driver().progress(); }
std::int64_t Engine::retire_all() { return core_->driver().retire_all(); }
Co<std::optional<std::int64_t>> Engine::next(const StopSignal* abandon) {
  return core_->driver().next(abandon);
}
Co<std::optional<std::int64_t>> Engine::next(std::stop_token token) {
  return core_->driver().next(std::move(token));
}
void Engine::drain() { core_->driver().drain(); }
void Engine::shut_down() noexcept { core_->shut_down(); }
bool Engine::cancel(const std::string& reason) { return core_->cancel(reason); }
Engine::SerialRun::SerialRun(Engine& engine, const char* call) : engine_(engine) {
  begin_serial_run(*engine.core_, call);
}
Engine::SerialRun::~SerialRun() { end_serial_run(*engine_.core_); }
void Engine::await_serial_slot(std::int64_t iter) { detail::await_serial_slot(*core_, iter); }
void Engine::run_serial(std::int64_t iter) { run_serial_iteration(*core_, iter); }

bool Engine::filled() const noexcept { return core_->filled(); }
void Engine::require_between_runs(const char* call) const { core_->require_between_runs(call); }
std::int64_t Engine::next_iteration() const noexcept { return core_->next_iteration(); }
const PlanGraph& Engine::graph() const noexcept { return core_->graph(); }
Runtime& Engine::runtime() noexcept { return core_->runtime(); }
std::size_t Engine::depth() const noexcept { return core_->slots(); }
const std::vector<TaskIndex>& Engine::serial_order() const noexcept {
  return core_->serial_order();
}
Stream& Engine::stream_of(TaskIndex task) const noexcept { return core_->stream_of(task); }

void Engine::set_on_run_failed(std::function<void(const std::exception_ptr&)> callback) {
  core_->set_on_run_failed(std::move(callback));
}
void Engine::set_timeouts(EngineTimeouts timeouts) {
  core_->set_timeouts(std::move(timeouts));
}
void Engine::set_failure_policy(FailurePolicy policy) { core_->set_failure_policy(policy); }
FailurePolicy Engine::failure_policy() const noexcept { return core_->failure_policy(); }
void Engine::set_retire_after_device(bool on) { core_->set_retire_after_device(on); }
bool Engine::retire_after_device() const noexcept { return core_->retire_after_device(); }
void Engine::set_observer(TaskObserver* observer) { core_->set_observer(observer); }
TaskObserver* Engine::observer() const noexcept { return core_->observer(); }
bool Engine::set_nvtx(bool on) { return core_->set_nvtx(on); }

}  // namespace swp::detail
