#pragma once
// ShortcutRoutine: the routine of a shortcut task — replays its cache, or runs the task's own
// routine once and caches what it left (see Pipeline::enable_shortcut).

#include <utility>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/core/declared_io.hpp"
#include "swp/engine/detail/shortcut_state.hpp"
#include "swp/engine/detail/task_routine.hpp"
#include "swp/engine/shortcut.hpp"

namespace swp::detail {

/// Wraps a task's routine (`inner`; nullptr when it has nothing to run) while the task is
/// shortcut. The caching execution keeps a coroutine frame only when the inner routine
/// suspends; a replay is a copy, without any.
template <class Ctx>
class ShortcutRoutine final : public TaskRoutine {
 public:
  /// `io`: the task's DeclaredIO (the plan graph's, which outlives this routine).
  ShortcutRoutine(ShortcutState<Ctx>& state, TaskIndex task, const TaskRoutine* inner,
                  const Writes<Ctx>* writes, const std::vector<DeclaredIO>& io)
      : state_(state), task_(task), inner_(inner), writes_(writes), io_(io) {}

  ReleasedCo run(void* context, TaskScope& scope, OutputBox* output) const override {
    Ctx& ctx = *static_cast<Ctx*>(context);
    if (state_.replay(task_, ctx, output, io_)) return {};
    ErasedCo body(inner_ != nullptr ? inner_->run(context, scope, output) : ReleasedCo{});
    if (!body.valid()) {
      state_.cache(task_, ctx, output, writes_, io_);
      return {};
    }
    return ErasedCo(cache_after(std::move(body), ctx, output)).release();
  }

  [[nodiscard]] bool shortcut() const noexcept override { return true; }

 private:
  Co<void> cache_after(ErasedCo body, Ctx& ctx, OutputBox* output) const {
    co_await body;
    state_.cache(task_, ctx, output, writes_, io_);
  }

  ShortcutState<Ctx>& state_;
  TaskIndex task_;
  const TaskRoutine* inner_;
  const Writes<Ctx>* writes_;
  const std::vector<DeclaredIO>& io_;
};

}  // namespace swp::detail
