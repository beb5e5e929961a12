#pragma once
// RequestPool: the load generator's payloads, with their digests computed once up front.

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "protocol.hpp"

namespace service {

/// `count` payloads of random sizes in [min_size, max_size] (a fixed seed: every run sends
/// the same bytes) and each one's digest for `rounds`, so that checking an answer costs the
/// client one mix, not the server's work again — the client must not compete with the server
/// for the machine's cores more than it has to.
class RequestPool {
 public:
  RequestPool(std::size_t count, std::size_t min_size, std::size_t max_size, std::uint32_t rounds)
      : rounds_(rounds) {
    if (count == 0 || min_size > max_size || max_size > max_payload)
      throw std::invalid_argument("RequestPool: bad sizes");
    std::mt19937_64 random(0x5eed);
    std::uniform_int_distribution<std::size_t> size(min_size, max_size);
    std::uniform_int_distribution<int> byte(0, 255);
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<std::byte> payload(size(random));
      for (auto& b : payload) b = static_cast<std::byte>(byte(random));
      digests_.push_back(digest(payload, rounds));
      payloads_.push_back(std::move(payload));
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return payloads_.size(); }
  [[nodiscard]] std::uint32_t rounds() const noexcept { return rounds_; }
  /// The payload request `id` carries, and the result its ok answer must have.
  [[nodiscard]] std::span<const std::byte> payload(std::uint64_t id) const noexcept {
    return payloads_[id % payloads_.size()];
  }
  [[nodiscard]] std::uint64_t expected(std::uint64_t id) const noexcept {
    return answer_of(id, digests_[id % digests_.size()]);
  }

 private:
  std::uint32_t rounds_;
  std::vector<std::vector<std::byte>> payloads_;
  std::vector<std::uint64_t> digests_;
};

}  // namespace service
