#include "swp/device/nvtx_ranges.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "swp/config.hpp"

namespace swp {

bool nvtx_compiled() noexcept { return SWP_HAVE_NVTX != 0; }

std::size_t nvtx_range_name(char* out, std::size_t size, std::string_view task, std::int64_t iter,
                            bool serial, bool skip) noexcept {
  if (size == 0) return 0;
  std::size_t n = 0;
  const std::size_t room = size - 1;  // the NUL's
  auto put = [&](std::string_view text) {
    const std::size_t take = std::min(text.size(), room - n);
    std::memcpy(out + n, text.data(), take);
    n += take;
  };
  put(serial ? "SWP_serial/" : "SWP/");
  put(task);
  put("/iter");
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, iter).ptr;
  put(std::string_view(digits, static_cast<std::size_t>(end - digits)));
  if (skip) put("[skip]");
  out[n] = '\0';
  return n;
}

#if !SWP_HAVE_NVTX
namespace detail {
std::uint64_t nvtx_range_start(const char*) noexcept { return 0; }
void nvtx_range_end(std::uint64_t) noexcept {}
}  // namespace detail
#endif

}  // namespace swp
