#include "swp/async/detail/asymmetric_fence.hpp"

#include <cstdio>
#include <cstdlib>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace swp::detail {

namespace {

#if defined(__linux__)
long membarrier(int command) noexcept { return syscall(__NR_membarrier, command, 0, 0); }

bool register_for_heavy_fences() noexcept {
  const long commands = membarrier(MEMBARRIER_CMD_QUERY);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}
#endif

}  // namespace

bool asymmetric_fences_available() noexcept {
#if defined(__linux__)
  // Once per process: registration is for the whole process and cannot be undone.
  static const bool available = register_for_heavy_fences();
  return available;
#else
  return false;
#endif
}

void heavy_fence() noexcept {
#if defined(__linux__)
  // Registered (asymmetric_fences_available), so it cannot fail: if it did, the light sides
  // would run unordered, which is worse than stopping.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  std::perror("swp: membarrier (heavy fence) failed");
#endif
  std::abort();
}

}  // namespace swp::detail
