#pragma once
// NVTX ranges of task instances, as the engines name them (seed 003): where NVTX is compiled in.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace swp {

/// Whether this build emits NVTX ranges (SWP_HAVE_NVTX); without it, enabling them on a
/// pipeline does nothing and says so (Pipeline::enable_nvtx returns false).
[[nodiscard]] bool nvtx_compiled() noexcept;

/// The name of a task instance's range: `SWP/{task}/iter{N}` when pipelined,
/// `SWP_serial/{task}/iter{N}` in a serial iteration, with `[skip]` appended for a shortcut
/// task; written into `out` (`size` bytes, NUL-terminated, cut short if it does not fit: task
/// names are long in nobody's profile) without allocating. Returns the length written.
///
/// Example: `char b[96]; swp::nvtx_range_name(b, sizeof b, "Load", 12, false, false);` ->
/// "SWP/Load/iter12"
std::size_t nvtx_range_name(char* out, std::size_t size, std::string_view task, std::int64_t iter,
                            bool serial, bool skip) noexcept;

namespace detail {

/// Starts a process-wide NVTX range called `name` (it may end on another thread: a task that
/// suspends resumes wherever its lane runs); returns its id, 0 where NVTX is not compiled in.
std::uint64_t nvtx_range_start(const char* name) noexcept;
/// Ends the range `id` started (nothing for 0).
void nvtx_range_end(std::uint64_t id) noexcept;

}  // namespace detail

}  // namespace swp
