#include "swp/io/record_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "swp/io/detail/pread_all.hpp"

namespace swp::io {

namespace {

constexpr std::uint64_t max_payload = std::numeric_limits<std::uint32_t>::max();

std::string hex(std::uint64_t v, int digits) {
  char text[24];
  std::snprintf(text, sizeof text, "%0*llx", digits, static_cast<unsigned long long>(v));
  return text;
}

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "neither a file nor a directory";
}

// Opens `path` for reading and returns the descriptor, refusing anything but a regular file.
// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the flag
// is cleared again, since io_uring honours it on reads of the descriptor's duplicates.
int open_regular(const std::filesystem::path& path, std::uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw RecordError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = std::string("cannot stat: ") + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = std::string("not a regular file (") + kind_of(st.st_mode) + ")";
  else if (const int flags = ::fcntl(fd, F_GETFL);
           flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    why = std::string("cannot clear O_NONBLOCK: ") + std::strerror(errno);
  if (!why.empty()) {
    ::close(fd);
    throw RecordError(path, 0, why);
  }
  size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

// The header's own fields: magic, version, checksum, and what the format says must be zero.
void check_header(const std::filesystem::path& path, const RecordFileHeader& header) {
  if (header.magic != record_magic) throw RecordError(path, 0, "not a swp record file (bad magic)");
  if (header.version != record_format_version)
    throw RecordError(path, offsetof(RecordFileHeader, version),
                      "unsupported format version " + std::to_string(header.version));
  if (header.header_checksum != header_checksum(header))
    throw RecordError(path, 0, "header checksum mismatch (corrupt header)");
  if (header.flags != 0)
    throw RecordError(path, offsetof(RecordFileHeader, flags),
                      "header flags are 0x" + hex(header.flags, 8) + " (format version " +
                          std::to_string(record_format_version) + " defines none: they must be 0)");
  if (header.reserved != 0)
    throw RecordError(path, offsetof(RecordFileHeader, reserved),
                      "reserved header field is 0x" + hex(header.reserved, 16) + " (must be 0)");
}

// Where the index lies: inside the file after the header, and the file ends with it. Checked
// without forming index_offset + record_count * 16, which a crafted header can overflow.
void check_index_place(const std::filesystem::path& path, const RecordFileHeader& header,
                       std::uint64_t file_bytes) {
  if (header.index_offset == 0)  // what RecordWriter writes first, until close()
    throw RecordError(path, offsetof(RecordFileHeader, index_offset),
                      "incomplete: the header has no index (its writer did not close it)");
  if (header.index_offset < record_header_bytes)
    throw RecordError(path, offsetof(RecordFileHeader, index_offset),
                      "index offset " + std::to_string(header.index_offset) + " is inside the " +
                          std::to_string(record_header_bytes) + "-byte header");
  if (header.index_offset > file_bytes ||
      header.record_count > (file_bytes - header.index_offset) / index_entry_bytes)
    throw RecordError(path, file_bytes,
                      "truncated: the file ends at offset " + std::to_string(file_bytes) +
                          ", before the end of its index (" + std::to_string(header.record_count) +
                          " entries of " + std::to_string(index_entry_bytes) +
                          " bytes from offset " + std::to_string(header.index_offset) + ")");
  const std::uint64_t index_end = header.index_offset + header.record_count * index_entry_bytes;
  if (index_end != file_bytes)
    throw RecordError(path, index_end,
                      std::to_string(file_bytes - index_end) +
                          " bytes after the end of the index (the file must end at offset " +
                          std::to_string(index_end) + ")");
}

// Every record's frame takes at least a frame header of the data area (between the header and
// the index), so the area bounds the count. Checked before a large index is allocated: a
// crafted count in a large sparse file (free to make) would otherwise have the reader allocate
// and zero up to half the file's size before the index checksum refuses it. An index of at
// most 1 MiB is read as it is: check_frames then names the entry at fault.
void check_index_count(const std::filesystem::path& path, const RecordFileHeader& header) {
  constexpr std::uint64_t small_index_entries = std::uint64_t{1} << 16;
  const std::uint64_t data_area = header.index_offset - record_header_bytes;
  if (header.record_count > small_index_entries &&
      header.record_count > data_area / frame_header_bytes)
    throw RecordError(path, offsetof(RecordFileHeader, record_count),
                      "record count " + std::to_string(header.record_count) +
                          " does not fit in the " + std::to_string(data_area) +
                          " bytes before the index (a record takes at least " +
                          std::to_string(frame_header_bytes) + ")");
}

// The index's memory, or a RecordError naming the file when it cannot be had (an index of a
// plausible count can still be larger than the memory there is).
void allocate_index(const std::filesystem::path& path, const RecordFileHeader& header,
                    std::vector<IndexEntry>& index) {
  try {
    index.resize(header.record_count);
  } catch (const std::bad_alloc&) {
    throw RecordError(path, header.index_offset,
                      "cannot allocate the index of " + std::to_string(header.record_count) +
                          " entries (" + std::to_string(header.record_count * index_entry_bytes) +
                          " bytes)");
  } catch (const std::length_error&) {
    throw RecordError(path, header.index_offset,
                      "cannot allocate the index of " + std::to_string(header.record_count) +
                          " entries (over the vector's maximum size)");
  }
}

// The frames tile the data area: each entry's frame starts where the one before ended, lies
// before the index, and the last one ends where the index starts; the payload lengths add up
// to the header's count. Every sum stays below the file size (lengths are checked first).
void check_frames(const std::filesystem::path& path, const RecordFileHeader& header,
                  std::span<const IndexEntry> index) {
  std::uint64_t expected = record_header_bytes;
  std::uint64_t payload = 0;
  for (std::uint64_t i = 0; i < index.size(); ++i) {
    const IndexEntry& e = index[i];
    const std::uint64_t at = header.index_offset + i * index_entry_bytes;
    const std::string entry = "index entry " + std::to_string(i);
    if (e.offset != expected)
      throw RecordError(path, at,
                        entry + " points at offset " + std::to_string(e.offset) + ", expected " +
                            std::to_string(expected));
    if (e.length > max_payload)
      throw RecordError(path, at,
                        entry + ": payload length " + std::to_string(e.length) +
                            " is over the format's limit of " + std::to_string(max_payload) +
                            " bytes");
    const std::uint64_t end = expected + frame_bytes(e.length);
    if (end > header.index_offset)
      throw RecordError(path, at,
                        entry + ": the record of " + std::to_string(e.length) +
                            " bytes at offset " + std::to_string(e.offset) + " ends at offset " +
                            std::to_string(end) + ", past the start of the index at offset " +
                            std::to_string(header.index_offset));
    expected = end;
    payload += e.length;
  }
  if (expected != header.index_offset)
    throw RecordError(path, expected,
                      "records end at offset " + std::to_string(expected) +
                          " but the index starts at " + std::to_string(header.index_offset));
  if (payload != header.data_bytes)
    throw RecordError(path, offsetof(RecordFileHeader, data_bytes),
                      "header says " + std::to_string(header.data_bytes) +
                          " payload bytes, its index " + std::to_string(payload));
}

}  // namespace

RecordFile::RecordFile(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = open_regular(path_, file_bytes_);
  try {
    RecordFileHeader header;
    if (file_bytes_ < sizeof header)
      throw RecordError(path_, file_bytes_,
                        "truncated: the file ends inside its " +
                            std::to_string(record_header_bytes) + "-byte header");
    detail::pread_all(fd_, path_, std::as_writable_bytes(std::span(&header, 1)), 0);
    check_header(path_, header);
    check_index_place(path_, header, file_bytes_);
    check_index_count(path_, header);
    allocate_index(path_, header, index_);
    detail::pread_all(fd_, path_, std::as_writable_bytes(std::span(index_)), header.index_offset);
    if (checksum(std::as_bytes(std::span(index_))) != header.index_checksum)
      throw RecordError(path_, header.index_offset, "index checksum mismatch (corrupt index)");
    // Frames follow each other without gaps: a run of consecutive records is one read.
    check_frames(path_, header, index_);
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
  if (entry.length > max_payload)  // frame_bytes would wrap
    throw RecordError(file, entry.offset,
                      "payload length " + std::to_string(entry.length) +
                          " is over the format's limit of " + std::to_string(max_payload) +
                          " bytes");
  const std::uint64_t size = frame_bytes(entry.length);
  if (frame.size() < size)
    throw RecordError(file, entry.offset + frame.size(), "truncated record frame");
  FrameHeader header;
  std::memcpy(&header, frame.data(), sizeof header);
  if (header.length != entry.length)
    throw RecordError(file, entry.offset,
                      "corrupt record header: length " + std::to_string(header.length) +
                          ", the index says " + std::to_string(entry.length));
  if (header.zero != 0)
    throw RecordError(
        file, entry.offset + offsetof(FrameHeader, zero),
        "corrupt record header: its reserved word is 0x" + hex(header.zero, 8) + " (must be 0)");
  // The padding is not covered by the checksum: checked byte by byte (at most 7).
  for (std::uint64_t at = frame_header_bytes + entry.length; at < size; ++at)
    if (frame[at] != std::byte{0})
      throw RecordError(file, entry.offset + at,
                        "padding byte 0x" + hex(std::to_integer<unsigned>(frame[at]), 2) +
                            " after the record of " + std::to_string(entry.length) +
                            " bytes at offset " + std::to_string(entry.offset) + " (must be 0)");
  const auto payload = frame.subspan(frame_header_bytes, entry.length);
  const std::uint64_t sum = checksum(payload);
  if (sum != header.checksum)
    throw RecordError(file, entry.offset,
                      "checksum mismatch in the record of " + std::to_string(entry.length) +
                          " bytes (stored " + hex(header.checksum, 16) + ", computed " +
                          hex(sum, 16) + ")");
  return payload;
}

}  // namespace swp::io
