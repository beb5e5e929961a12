#pragma once
// The number of the iteration a progress(), next() or async_progress() retired, for checks
// against numbers: a Retired does not convert to one by itself.

#include <cstdint>
#include <optional>

namespace swp::test {

/// `retired->iter()`, or empty when nothing was retired (end of data).
template <class Retired>
std::optional<std::int64_t> iter_of(const std::optional<Retired>& retired) {
  if (!retired) return std::nullopt;
  return retired->iter();
}

}  // namespace swp::test
