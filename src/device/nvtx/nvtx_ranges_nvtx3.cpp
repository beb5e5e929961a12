// The NVTX calls behind swp's task ranges (compiled where nvtx3 is found: SWP_HAVE_NVTX).

#include <nvtx3/nvToolsExt.h>

#include "swp/device/nvtx_ranges.hpp"

namespace swp::detail {

// nvtxRangeStartA copies the name where a tool (Nsight Systems) is attached and returns at
// once where none is: the caller's buffer may go right after.
std::uint64_t nvtx_range_start(const char* name) noexcept { return nvtxRangeStartA(name); }

void nvtx_range_end(std::uint64_t id) noexcept {
  if (id != 0) nvtxRangeEnd(id);
}

}  // namespace swp::detail
