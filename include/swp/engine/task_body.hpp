#pragma once
// Binding task bodies to a plan: swp::task<Ctx>(...) and swp::Plan<Ctx>.

#include <concepts>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "swp/async/co.hpp"
#include "swp/core/pipeline_plan.hpp"
#include "swp/engine/iter_context.hpp"
#include "swp/engine/shortcut.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp {

/// A task body bound for contexts of type `Ctx`, as stored (type-erased) in PipelineTask::fn.
template <class Ctx>
struct TaskBody {
  std::function<Co<void>(Ctx&, TaskScope&, detail::OutputBox*)> run;
  std::function<std::unique_ptr<detail::OutputBox>()> make_box;  // empty: no output
  Writes<Ctx> writes;  // the context fields it declares it writes (shortcut replay)
};

namespace detail {

template <class T>
struct CoValue {
  static constexpr bool is_co = false;
  using type = T;
};
template <class T>
struct CoValue<Co<T>> {
  static constexpr bool is_co = true;
  using type = T;
};

template <class Ctx, class Fn>
decltype(auto) call_body(Fn& fn, Ctx& ctx, TaskScope& scope) {
  if constexpr (std::is_invocable_v<Fn&, Ctx&, TaskScope&>) {
    return fn(ctx, scope);
  } else {
    return fn(ctx);
  }
}

template <class Ctx, class Fn>
using body_result_t = std::conditional_t<std::is_invocable_v<Fn&, Ctx&, TaskScope&>,
                                         std::invoke_result<Fn&, Ctx&, TaskScope&>,
                                         std::invoke_result<Fn&, Ctx&>>::type;

/// The value type a body produces (void for none).
template <class Ctx, class Fn>
using body_value_t = typename CoValue<body_result_t<Ctx, Fn>>::type;

template <class Ctx, class Fn>
Co<void> invoke_body(std::shared_ptr<Fn> fn, Ctx& ctx, TaskScope& scope, OutputBox* box) {
  using R = body_result_t<Ctx, Fn>;
  using V = body_value_t<Ctx, Fn>;
  if constexpr (CoValue<R>::is_co) {
    if constexpr (std::is_void_v<V>) {
      co_await call_body(*fn, ctx, scope);
    } else {
      static_cast<TypedBox<V>*>(box)->value.emplace(co_await call_body(*fn, ctx, scope));
    }
  } else if constexpr (std::is_void_v<V>) {
    call_body(*fn, ctx, scope);
  } else {
    static_cast<TypedBox<V>*>(box)->value.emplace(call_body(*fn, ctx, scope));
  }
}

}  // namespace detail

/// Something a task of contexts `Ctx` can run: `fn(ctx)` or `fn(ctx, scope)`, returning
/// `Co<T>`, `Co<void>`, a plain `T` or nothing.
template <class Fn, class Ctx>
concept TaskFunction = std::is_invocable_v<Fn&, Ctx&> || std::is_invocable_v<Fn&, Ctx&, TaskScope&>;

/// Binds `fn` as the body of a task called `name` for pipelines over contexts `Ctx`.
/// Example: `plan.add(swp::task<Ctx>("H2D", copy_batch), {.stage = 0, .stream = "memcpy"});`
template <class Ctx, TaskFunction<Ctx> Fn>
PipelineTask task(std::string name, Fn fn, std::vector<DeclaredIO> io = {}) {
  return task<Ctx>(std::move(name), std::move(fn), Writes<Ctx>{}, std::move(io));
}

/// Binds `fn` as above, declaring the context fields it writes (see swp::writes): a shortcut
/// of the task replays them.
/// Example: `swp::task<Ctx>("Forward", forward, swp::writes(&Fields::logits))`.
template <class Ctx, TaskFunction<Ctx> Fn, class Fields>
  requires std::derived_from<Ctx, Fields>
PipelineTask task(std::string name, Fn fn, const Writes<Fields>& writes,
                  std::vector<DeclaredIO> io = {}) {
  using V = detail::body_value_t<Ctx, Fn>;
  auto shared = std::make_shared<Fn>(std::move(fn));
  TaskBody<Ctx> body;
  body.run = [shared](Ctx& ctx, TaskScope& scope, detail::OutputBox* box) {
    return detail::invoke_body<Ctx, Fn>(shared, ctx, scope, box);
  };
  if constexpr (!std::is_void_v<V>) {
    body.make_box = [] { return std::make_unique<detail::TypedBox<V>>(); };
  }
  if constexpr (std::is_same_v<Fields, Ctx>) {
    body.writes = writes;
  } else {
    body.writes = writes.template rebind<Ctx>();
  }
  return PipelineTask(std::move(name), std::move(body), std::move(io));
}

/// A PipelinePlan whose `add` binds typed bodies and returns typed Output handles.
///
/// Example:
/// ```
/// swp::Plan<Ctx> plan;
/// auto h2d = plan.add("H2D", [](Ctx& c) -> swp::Co<Tensor> { co_return copy(c.batch); },
///                     {.stage = 0, .stream = "memcpy"});
/// auto fwd = plan.add("Forward", [h2d](Ctx& c) -> swp::Co<void> {
///   const Tensor& x = co_await c.get(h2d);
///   ...
/// }, {.stage = 1});
/// plan.intra_iter_deps = {{fwd, h2d}};
/// ```
template <class Ctx>
class Plan : public PipelinePlan {
 public:
  using PipelinePlan::add;

  template <TaskFunction<Ctx> Fn>
  Output<detail::body_value_t<Ctx, Fn>> add(std::string name, Fn fn, TaskSchedule schedule = {},
                                            SyntheticCost cost = {}) {
    TaskHandle h = PipelinePlan::add(task<Ctx>(std::move(name), std::move(fn)),
                                     std::move(schedule), cost);
    return Output<detail::body_value_t<Ctx, Fn>>{h};
  }

  /// Declares more context fields `task` writes (see swp::writes), for shortcut replay.
  /// Throws std::invalid_argument when `task` is not in the plan or has no body bound for Ctx.
  template <class Fields>
    requires std::derived_from<Ctx, Fields>
  void declare_writes(const TaskRef& task, const Writes<Fields>& writes) {
    TaskBody<Ctx>* body = nullptr;
    for (auto& planned : this->tasks)
      if (planned.task.name == task.name()) body = std::any_cast<TaskBody<Ctx>>(&planned.task.fn);
    if (body == nullptr)
      throw std::invalid_argument("declare_writes: '" + task.name() +
                                  "' is not a task of this plan with a body for its context type");
    if constexpr (std::is_same_v<Fields, Ctx>) {
      body->writes.append(writes);
    } else {
      body->writes.append(writes.template rebind<Ctx>());
    }
  }

  /// Declares a DeclaredIO of `task` (state outside the context it reads and writes).
  /// Throws std::invalid_argument when `task` is not in the plan.
  void declare_io(const TaskRef& task, DeclaredIO io) {
    for (auto& planned : this->tasks) {
      if (planned.task.name == task.name()) {
        planned.task.io.push_back(std::move(io));
        return;
      }
    }
    throw std::invalid_argument("declare_io: '" + task.name() + "' is not a task of this plan");
  }
};

}  // namespace swp
