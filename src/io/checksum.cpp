// Checksums of the record format: XXH3-64 from libxxhash (Debian's libxxhash-dev).

#include <xxhash.h>

#include <cstddef>

#include "swp/io/record_format.hpp"

#if SWP_IO_AVX2
namespace swp::io::detail {
std::uint64_t xxh3_avx2(const void* data, std::size_t size) noexcept;
}
#endif

namespace swp::io {

std::uint64_t checksum(std::span<const std::byte> bytes) noexcept {
#if SWP_IO_AVX2
  // Checksums are most of the loader's CPU time after the copy out of the page cache.
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx2) return detail::xxh3_avx2(bytes.data(), bytes.size());
#endif
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::uint64_t header_checksum(const RecordFileHeader& header) noexcept {
  return XXH3_64bits(&header, offsetof(RecordFileHeader, header_checksum));
}

}  // namespace swp::io
