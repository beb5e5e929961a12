#pragma once
// Releasing: which engine's release an engine step is compiled for (not for direct use).

#include <cstdint>

namespace swp::detail {

/// The flattened hot paths inline every step below them. Compiled for `either`, the clock's
/// period (ClockRelease::advance) carried data-flow's release of a successor at each of its
/// count-downs, and its hooks' and errors' finish besides (38 KB of code, against 13 KB
/// compiled for `clock`, which made the clock 6% faster per task with one thread;
/// docs/benchmarks.md). `either` asks the core whether its policy's start proceeds at once
/// (data-flow's steps are compiled for it: its successor's release inlined helps them).
enum class Releasing : std::uint8_t { either, clock };

}  // namespace swp::detail
