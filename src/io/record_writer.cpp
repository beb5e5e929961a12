#include "swp/io/record_writer.hpp"

#include <cerrno>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace swp::io {

namespace {
[[noreturn]] void fail(const std::filesystem::path& path, const char* what) {
  throw std::system_error(errno, std::generic_category(), std::string(what) + " " + path.string());
}
}  // namespace

RecordWriter::RecordWriter(std::filesystem::path path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) fail(path_, "cannot create");
  // A header saying "0 records, no index" until close(): a file left by a writer that died
  // is refused by its index check instead of read as a shorter file.
  RecordFileHeader header;
  header.header_checksum = header_checksum(header);
  write(&header, sizeof header);
}

RecordWriter::~RecordWriter() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): close() reports; a destructor cannot
  }
}

void RecordWriter::write(const void* data, std::size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes) fail(path_, "cannot write");
  offset_ += bytes;
}

std::uint64_t RecordWriter::append(std::span<const std::byte> payload) {
  if (file_ == nullptr)
    throw std::logic_error("RecordWriter::append after close: " + path_.string());
  if (payload.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("record of " + std::to_string(payload.size()) +
                            " bytes is over the format's 4 GiB - 1 limit: " + path_.string());
  const FrameHeader frame{.length = static_cast<std::uint32_t>(payload.size()),
                          .zero = 0,
                          .checksum = checksum(payload)};
  index_.push_back({.offset = offset_, .length = payload.size()});
  write(&frame, sizeof frame);
  write(payload.data(), payload.size());
  static constexpr std::byte zeros[8]{};
  write(zeros, frame_bytes(payload.size()) - frame_header_bytes - payload.size());
  data_bytes_ += payload.size();
  return index_.size() - 1;
}

void RecordWriter::close() {
  if (file_ == nullptr) return;
  RecordFileHeader header;
  header.record_count = index_.size();
  header.index_offset = offset_;
  header.data_bytes = data_bytes_;
  header.index_checksum = checksum(std::as_bytes(std::span(index_)));
  header.header_checksum = header_checksum(header);
  std::FILE* file = std::exchange(file_, nullptr);
  const bool ok =
      // An empty index writes nothing (and fwrite must not see its null data pointer).
      (index_.empty() ||
       std::fwrite(index_.data(), sizeof(IndexEntry), index_.size(), file) == index_.size()) &&
      std::fseek(file, 0, SEEK_SET) == 0 && std::fwrite(&header, sizeof header, 1, file) == 1;
  const int error = errno;
  if (std::fclose(file) != 0 || !ok) {
    errno = ok ? errno : error;
    fail(path_, "cannot write");
  }
}

}  // namespace swp::io
