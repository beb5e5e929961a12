#include "swp/io/record_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "swp/io/detail/pread_all.hpp"

namespace swp::io {

namespace {
std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}
}  // namespace

RecordFile::RecordFile(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw RecordError(path_, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw RecordError(path_, 0, "not a regular file");
  }
  file_bytes_ = static_cast<std::uint64_t>(st.st_size);
  try {
    RecordFileHeader header;
    if (file_bytes_ < sizeof header)
      throw RecordError(path_, file_bytes_,
                        "truncated: the file ends inside its " +
                            std::to_string(record_header_bytes) + "-byte header");
    detail::pread_all(fd_, path_, std::as_writable_bytes(std::span(&header, 1)), 0);
    if (header.magic != record_magic)
      throw RecordError(path_, 0, "not a swp record file (bad magic)");
    if (header.version != record_format_version)
      throw RecordError(path_, 8, "unsupported format version " + std::to_string(header.version));
    if (header.header_checksum != header_checksum(header))
      throw RecordError(path_, 0, "header checksum mismatch (corrupt header)");
    const std::uint64_t index_bytes = header.record_count * index_entry_bytes;
    if (header.index_offset < record_header_bytes ||
        header.record_count > (file_bytes_ / index_entry_bytes) ||
        header.index_offset + index_bytes > file_bytes_)
      throw RecordError(path_, file_bytes_,
                        "truncated: the file ends before its index (index at offset " +
                            std::to_string(header.index_offset) + ", " +
                            std::to_string(index_bytes) + " bytes; file has " +
                            std::to_string(file_bytes_) + ")");
    index_.resize(header.record_count);
    detail::pread_all(fd_, path_, std::as_writable_bytes(std::span(index_)), header.index_offset);
    if (checksum(std::as_bytes(std::span(index_))) != header.index_checksum)
      throw RecordError(path_, header.index_offset, "index checksum mismatch (corrupt index)");
    // Frames follow each other without gaps: a run of consecutive records is one read.
    std::uint64_t expected = record_header_bytes;
    for (std::uint64_t i = 0; i < index_.size(); ++i) {
      if (index_[i].offset != expected)
        throw RecordError(path_, header.index_offset + i * index_entry_bytes,
                          "index entry " + std::to_string(i) + " points at offset " +
                              std::to_string(index_[i].offset) + ", expected " +
                              std::to_string(expected));
      expected += frame_bytes(index_[i].length);
    }
    if (expected != header.index_offset)
      throw RecordError(path_, expected,
                        "records end at offset " + std::to_string(expected) +
                            " but the index starts at " + std::to_string(header.index_offset));
    data_bytes_ = header.data_bytes;
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

RecordFile::RecordFile(RecordFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      file_bytes_(other.file_bytes_),
      data_bytes_(other.data_bytes_),
      index_(std::move(other.index_)) {}

RecordFile& RecordFile::operator=(RecordFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    file_bytes_ = other.file_bytes_;
    data_bytes_ = other.data_bytes_;
    index_ = std::move(other.index_);
  }
  return *this;
}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::byte> RecordFile::read(std::uint64_t i) const {
  const IndexEntry& e = index_.at(i);
  std::vector<std::byte> frame(frame_bytes(e.length));
  detail::pread_all(fd_, path_, frame, e.offset);
  const auto payload = verify_frame(path_, e, frame);
  return {payload.begin(), payload.end()};
}

void RecordFile::verify_range(std::uint64_t first, std::uint64_t last,
                              std::vector<std::byte>& buffer) const {
  const std::uint64_t begin = index_[first].offset;
  const std::uint64_t end = index_[last - 1].offset + frame_bytes(index_[last - 1].length);
  buffer.resize(end - begin);
  detail::pread_all(fd_, path_, buffer, begin);
  for (std::uint64_t i = first; i < last; ++i) {
    const IndexEntry& e = index_[i];
    verify_frame(path_, e, std::span(buffer).subspan(e.offset - begin, frame_bytes(e.length)));
  }
}

std::span<const std::byte> verify_frame(const std::filesystem::path& file, const IndexEntry& entry,
                                        std::span<const std::byte> frame) {
  FrameHeader header;
  if (frame.size() < frame_bytes(entry.length))
    throw RecordError(file, entry.offset + frame.size(), "truncated record frame");
  std::memcpy(&header, frame.data(), sizeof header);
  if (header.length != entry.length || header.zero != 0)
    throw RecordError(file, entry.offset,
                      "corrupt record header (length " + std::to_string(header.length) +
                          ", index says " + std::to_string(entry.length) + ")");
  const auto payload = frame.subspan(frame_header_bytes, entry.length);
  const std::uint64_t sum = checksum(payload);
  if (sum != header.checksum)
    throw RecordError(file, entry.offset,
                      "checksum mismatch in the record of " + std::to_string(entry.length) +
                          " bytes (stored " + hex(header.checksum) + ", computed " + hex(sum) +
                          ")");
  return payload;
}

}  // namespace swp::io
