// Checksums of the record format: XXH3-64 from libxxhash (Debian's libxxhash-dev).

#include <xxhash.h>

#include <cstddef>

#include "swp/io/record_format.hpp"

namespace swp::io {

std::uint64_t checksum(std::span<const std::byte> bytes) noexcept {
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::uint64_t header_checksum(const RecordFileHeader& header) noexcept {
  return XXH3_64bits(&header, offsetof(RecordFileHeader, header_checksum));
}

}  // namespace swp::io
