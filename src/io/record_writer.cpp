#include "swp/io/record_writer.hpp"

#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace swp::io {

namespace {
[[noreturn]] void fail(const std::filesystem::path& path, const char* what) {
  throw std::system_error(errno, std::generic_category(), std::string(what) + " " + path.string());
}

// A file without a name beside `path` for the index entries that do not stay in memory: on
// the output's file system, which has the room the file needs anyway (the index ends up there),
// and unlinked at once, so no exit leaves it behind.
std::FILE* open_spill(const std::filesystem::path& path) {
  std::string name = path.string() + ".index-XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail(path, "cannot create the index spill file beside");
  ::unlink(name.c_str());
  std::FILE* spill = ::fdopen(fd, "w+b");
  if (spill == nullptr) {
    const int error = errno;
    ::close(fd);
    errno = error;
    fail(path, "cannot create the index spill file beside");
  }
  return spill;
}

struct FreeHashState {
  void operator()(XXH3_state_t* state) const noexcept { XXH3_freeState(state); }
};
}  // namespace

RecordWriter::RecordWriter(std::filesystem::path path)
    : path_(std::move(path)), exceptions_at_construction_(std::uncaught_exceptions()) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) fail(path_, "cannot create");
  // A header saying "0 records, no index" until close(): a file left by a writer that died
  // is refused by its index check instead of read as a shorter file.
  RecordFileHeader header;
  header.header_checksum = header_checksum(header);
  write(&header, sizeof header);
}

RecordWriter::~RecordWriter() {
  // Closing while an exception unwinds would turn the records so far into a valid, shorter
  // file: the producer failed, so the file keeps its "no index" header instead.
  if (std::uncaught_exceptions() > exceptions_at_construction_ || write_failed_) {
    abandon();
    return;
  }
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): close() reports; a destructor cannot
  }
}

// Ends the file as it is, without the index: its header still says "no index", so a reader
// refuses it as incomplete. The frames written so far are flushed; errors do not matter.
void RecordWriter::abandon() noexcept {
  if (spill_ != nullptr) std::fclose(std::exchange(spill_, nullptr));
  if (file_ != nullptr) std::fclose(std::exchange(file_, nullptr));
}

void RecordWriter::write(const void* data, std::size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes) {
    write_failed_ = true;
    fail(path_, "cannot write");
  }
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
  if (index_.size() == index_block) spill_index();
  index_.push_back({.offset = offset_, .length = payload.size()});
  ++records_;
  write(&frame, sizeof frame);
  write(payload.data(), payload.size());
  static constexpr std::byte zeros[8]{};
  write(zeros, frame_bytes(payload.size()) - frame_header_bytes - payload.size());
  data_bytes_ += payload.size();
  return records_ - 1;
}

void RecordWriter::spill_index() {
  if (spill_ == nullptr) spill_ = open_spill(path_);
  if (std::fwrite(index_.data(), sizeof(IndexEntry), index_.size(), spill_) != index_.size()) {
    write_failed_ = true;  // the spill may hold part of the block: the index is lost
    fail(path_, "cannot write the index spill file of");
  }
  index_.clear();
}

// Appends the whole index to `file` — the spilled entries, then those in memory — and its
// XXH3-64 (streamed: the same value as hashing it in one piece). False on a failed read or
// write (errno says why); allocates nothing but the hash state.
bool RecordWriter::write_index(std::FILE* file, std::uint64_t& index_checksum) {
  const std::unique_ptr<XXH3_state_t, FreeHashState> hash(XXH3_createState());
  if (hash == nullptr || XXH3_64bits_reset(hash.get()) != XXH_OK) {
    errno = ENOMEM;
    return false;
  }
  const auto put = [&](const IndexEntry* entries, std::size_t n) {
    // An empty index writes nothing (and fwrite must not see its null data pointer).
    if (n == 0) return true;
    XXH3_64bits_update(hash.get(), entries, n * sizeof(IndexEntry));
    return std::fwrite(entries, sizeof(IndexEntry), n, file) == n;
  };
  if (spill_ != nullptr) {
    if (std::fseek(spill_, 0, SEEK_SET) != 0) return false;
    IndexEntry block[1024];
    std::size_t n = 0;
    while ((n = std::fread(block, sizeof(IndexEntry), std::size(block), spill_)) > 0)
      if (!put(block, n)) return false;
    if (std::ferror(spill_) != 0) return false;
  }
  if (!put(index_.data(), index_.size())) return false;
  index_checksum = XXH3_64bits_digest(hash.get());
  return true;
}

void RecordWriter::close() {
  if (file_ == nullptr) return;
  if (write_failed_) {
    abandon();
    throw std::logic_error("RecordWriter::close after a failed write: " + path_.string() +
                           " is left incomplete");
  }
  std::FILE* file = std::exchange(file_, nullptr);
  RecordFileHeader header;
  header.record_count = records_;
  header.index_offset = offset_;
  header.data_bytes = data_bytes_;
  bool ok = write_index(file, header.index_checksum);
  header.header_checksum = header_checksum(header);
  ok =
      ok && std::fseek(file, 0, SEEK_SET) == 0 && std::fwrite(&header, sizeof header, 1, file) == 1;
  const int error = errno;
  if (spill_ != nullptr) std::fclose(std::exchange(spill_, nullptr));  // unlinked: it goes
  if (std::fclose(file) != 0 || !ok) {
    errno = ok ? errno : error;
    fail(path_, "cannot write");
  }
}

}  // namespace swp::io
