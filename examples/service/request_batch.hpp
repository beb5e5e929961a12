#pragma once
// RequestBatch: the requests one micro-batch gathered — one pipeline iteration's input.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "batch_timeline.hpp"

namespace service {

class Session;

/// The requests gathered into one batch, as read from the sockets (still encoded: decoding
/// them is the pipeline's first task), each with the connection its answer goes to. The
/// bodies share one buffer, so a batch costs two allocations however many requests it has.
struct RequestBatch {
  struct Item {
    std::shared_ptr<Session> session;  // kept alive until answered, even if the client left
    std::uint32_t offset = 0;          // of the body in `bodies`
    std::uint32_t size = 0;
  };

  std::vector<std::byte> bodies;
  std::vector<Item> items;
  /// When the batch passed each step: the batcher stamps opened, sealed and submitted, the
  /// tasks the rest (for --trace; a few clock reads per batch).
  BatchTimes times;

  [[nodiscard]] std::size_t size() const noexcept { return items.size(); }
  [[nodiscard]] bool empty() const noexcept { return items.empty(); }
  [[nodiscard]] std::span<const std::byte> body(const Item& item) const noexcept {
    return {bodies.data() + item.offset, item.size};
  }

  /// Appends a copy of `body` (a request body, at least request_header bytes) from `session`.
  void add(std::shared_ptr<Session> session, std::span<const std::byte> body) {
    if (items.empty()) times.opened = TraceClock::now();
    const std::size_t at = bodies.size();
    bodies.resize(at + body.size());
    std::memcpy(bodies.data() + at, body.data(), body.size());
    items.push_back({std::move(session), static_cast<std::uint32_t>(at),
                     static_cast<std::uint32_t>(body.size())});
  }
};

}  // namespace service
