#pragma once
// pread until the span is full: a short read past the end of the file is a truncation error.

#include <cstdint>
#include <filesystem>
#include <span>

namespace swp::io::detail {

/// Reads `out.size()` bytes at `offset` of `fd` (named `file` in errors). Errors: RecordError
/// at the offset where the file ended (truncated) or where the read failed (errno text).
void pread_all(int fd, const std::filesystem::path& file, std::span<std::byte> out,
               std::uint64_t offset);

}  // namespace swp::io::detail
