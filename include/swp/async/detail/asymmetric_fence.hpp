#pragma once
// Asymmetric fences: a store-load barrier whose cost is paid by the rare side only.

#include <atomic>

namespace swp::detail {

/// The store-buffering pattern (each side stores its flag, then loads the other's) between a
/// hot side that runs it on every step and a rare side: the hot side's light fence is a
/// compiler barrier only; the rare side's heavy fence makes every thread of the process run a
/// full barrier (Linux membarrier, private expedited). Together they order each side's store
/// before its load, as two seq_cst fences would: either the hot side's load sees the rare
/// side's store, or the rare side's load sees the hot side's.
/// Like seq_cst_fence, they never create happens-before edges (acquire/release on the flags
/// do that), so ThreadSanitizer not modelling them hides no race it could report.

/// Whether heavy fences work in this process (registers it for them on the first call).
/// Where they do not (another OS, a kernel or sandbox without membarrier), a protocol that
/// needs them must not run its light side.
bool asymmetric_fences_available() noexcept;

/// The hot side's fence: orders its store before its load in the compiled code; the heavy
/// fence on the rare side does the rest.
inline void light_fence() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

/// The rare side's fence (a system call: microseconds). Only after
/// asymmetric_fences_available() returned true.
void heavy_fence() noexcept;

}  // namespace swp::detail
