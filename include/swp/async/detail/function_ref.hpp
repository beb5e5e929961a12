#pragma once
// FunctionRef: a non-owning reference to a callable, for calls that must not allocate and
// need not store what they call (std::function may allocate; a template cannot be virtual).

#include <memory>
#include <type_traits>
#include <utility>

namespace swp::detail {

template <class Signature>
class FunctionRef;

/// Refers to a callable for the duration of one call: the callable must outlive every
/// invocation of the FunctionRef (pass a lambda straight to the function that takes it).
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
             std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like a function
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace swp::detail
