#pragma once
// How a segment call keeps, passes and checks its arguments, and wraps its errors.

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "swp/lazy/deferred.hpp"
#include "swp/lazy/detail/callable_traits.hpp"
#include "swp/lazy/lazy_error.hpp"

namespace swp {

namespace detail {

template <class T>
struct IsDeferred : std::false_type {};
template <class T>
struct IsDeferred<Deferred<T>> : std::true_type {};
template <class X>
inline constexpr bool is_deferred_v = IsDeferred<std::remove_cvref_t<X>>::value;

/// How a call keeps an argument until its segment runs: a pointer to an input it writes (the
/// caller's object), a Deferred otherwise (a plain value becomes a ready Deferred).
template <class P>
using Stored = std::conditional_t<writes_param_v<P>, std::remove_reference_t<P>*,
                                  Deferred<std::remove_cvref_t<P>>>;

template <class T>
struct IsReferenceWrapper : std::false_type {};
template <class T>
struct IsReferenceWrapper<std::reference_wrapper<T>> : std::true_type {};
template <class C>
inline constexpr bool is_reference_wrapper_v = IsReferenceWrapper<std::remove_cvref_t<C>>::value;

template <class X>
void materialise_if_deferred(const X& x) {
  if constexpr (is_deferred_v<X>) x.materialise();
}

template <class X>
bool is_pending_deferred(const X& x) noexcept {
  if constexpr (is_deferred_v<X>) {
    return x.valid() && !x.is_ready();  // an empty one fails where it is read, as before
  } else {
    return false;
  }
}

template <class P, class X>
Stored<P> store(X&& x) {
  if constexpr (writes_param_v<P>) {
    static_assert(std::is_lvalue_reference_v<X&&> && !is_deferred_v<X>,
                  "a segment parameter it writes (T&) takes the caller's object, an lvalue");
    return &x;
  } else if constexpr (is_deferred_v<X>) {
    return Deferred<std::remove_cvref_t<P>>(std::forward<X>(x));
  } else {
    return Deferred<std::remove_cvref_t<P>>::ready(std::forward<X>(x));
  }
}

// The argument a stored input gives the body: the caller's object, or the (materialised) value.
template <class S>
decltype(auto) unstore(S& s) {
  if constexpr (std::is_pointer_v<S>) {
    return *s;
  } else {
    return s.get();
  }
}

// The argument a call's own argument gives a body run at once.
template <class X>
decltype(auto) pass(X&& x) {
  if constexpr (is_deferred_v<X>) {
    return x.get();
  } else {
    return std::forward<X>(x);
  }
}

template <class X>
const void* address_of(X&& x) noexcept {
  if constexpr (std::is_lvalue_reference_v<X&&> && !is_deferred_v<X>) {
    return static_cast<const void*>(std::addressof(x));
  } else {
    return nullptr;
  }
}

/// "what()" of an exception, for SegmentError's message.
inline std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

/// A segment's body wrapped so the current exception becomes a SegmentError naming it, with
/// the original nested.
inline std::exception_ptr segment_error(const std::string& name) {
  const std::exception_ptr original = std::current_exception();
  try {
    // An error from another segment's materialisation already names that segment.
    std::rethrow_exception(original);
  } catch (const LazyError&) {
    return original;
  } catch (...) {
    try {
      std::throw_with_nested(SegmentError(name, describe(original)));
    } catch (...) {
      return std::current_exception();
    }
  }
}

/// The object and member function a segment registered from a method calls.
template <class M, class C>
struct BoundMethod;
template <class R, class C, class... A, class Obj>
struct BoundMethod<R (C::*)(A...), Obj> {
  R (C::*method)(A...);
  Obj* object;
  R operator()(A... a) const { return (object->*method)(std::forward<A>(a)...); }
};
template <class R, class C, class... A, class Obj>
struct BoundMethod<R (C::*)(A...) const, Obj> {
  R (C::*method)(A...) const;
  Obj* object;
  R operator()(A... a) const { return (object->*method)(std::forward<A>(a)...); }
};

}  // namespace detail

}  // namespace swp
