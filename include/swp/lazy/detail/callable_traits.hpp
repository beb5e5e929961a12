#pragma once
// The signature of a segment's callable: result and parameter types, deduced once.

#include <tuple>
#include <type_traits>

namespace swp::detail {

template <class F>
struct Signature : Signature<decltype(&std::remove_cvref_t<F>::operator())> {};

template <class R, class... A>
struct Signature<R (*)(A...)> {
  using result = R;
  using params = std::tuple<A...>;
  using function = R(A...);  ///< the signature as a function type: swp::Segment<function>
};
template <class R, class... A>
struct Signature<R (*)(A...) noexcept> : Signature<R (*)(A...)> {};
template <class R, class C, class... A>
struct Signature<R (C::*)(A...)> : Signature<R (*)(A...)> {
  using object = C;
};
template <class R, class C, class... A>
struct Signature<R (C::*)(A...) const> : Signature<R (*)(A...)> {
  using object = const C;
};
template <class R, class C, class... A>
struct Signature<R (C::*)(A...) noexcept> : Signature<R (C::*)(A...)> {};
template <class R, class C, class... A>
struct Signature<R (C::*)(A...) const noexcept> : Signature<R (C::*)(A...) const> {};

/// A parameter the segment writes: a non-const lvalue reference (the C++ counterpart of a
/// PyTorch op mutating its input in place).
template <class P>
inline constexpr bool writes_param_v =
    std::is_lvalue_reference_v<P> && !std::is_const_v<std::remove_reference_t<P>>;

}  // namespace swp::detail
