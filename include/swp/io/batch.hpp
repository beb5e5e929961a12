#pragma once
// Batch: a loader's unit of output — records collated into one reusable buffer.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "swp/io/read_order.hpp"

namespace swp::io {

namespace detail {
struct BatchBuffer;
class LoaderState;
}  // namespace detail

/// Records of one batch, verified, in the loader's order, laid out in one buffer as their
/// frames were on disk (record_format.hpp): `bytes()` is what to copy to a device in one go,
/// `record(i)` the payload of the i-th record inside it. The buffer goes back to its loader's
/// pool (and is reused) when the batch and all its copies are gone; copies share it.
/// The buffer is page-locked (`pinned()`) where the program has the CUDA backend (links
/// libswp-cuda, swp::register_cuda_backend()), a GPU is present and LoaderOptions::pinned is
/// set; 4 KiB-aligned host memory otherwise.
class Batch {
 public:
  Batch() = default;

  /// The batch's number in its epoch (0, 1, ...) and the epoch.
  [[nodiscard]] std::uint64_t number() const noexcept { return number_; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// Records in the batch.
  [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }
  [[nodiscard]] bool empty() const noexcept { return records_.empty(); }
  /// Record i's payload (verified against its checksum).
  [[nodiscard]] std::span<const std::byte> record(std::size_t i) const { return records_.at(i); }
  /// Where record i came from.
  [[nodiscard]] RecordRef ref(std::size_t i) const { return refs_.at(i); }
  [[nodiscard]] std::span<const RecordRef> refs() const noexcept { return refs_; }
  /// The batch's frames, contiguous (payloads and their 16-byte frame headers).
  [[nodiscard]] std::span<std::byte> bytes() const noexcept { return bytes_; }
  /// Payload bytes of all records.
  [[nodiscard]] std::size_t payload_bytes() const noexcept { return payload_bytes_; }
  [[nodiscard]] bool pinned() const noexcept;

 private:
  friend class detail::LoaderState;

  std::shared_ptr<detail::BatchBuffer> buffer_;
  std::span<std::byte> bytes_;
  std::vector<std::span<const std::byte>> records_;
  std::vector<RecordRef> refs_;
  std::uint64_t number_ = 0;
  std::uint64_t epoch_ = 0;
  std::size_t payload_bytes_ = 0;
};

}  // namespace swp::io
