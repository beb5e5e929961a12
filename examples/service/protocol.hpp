#pragma once
// The micro-batch service's wire format: length-prefixed request frames, fixed-size responses,
// and the digest a request asks for (computed by the server's compute stage, checked by
// clients).
//
// Request frame (little-endian):  u32 body_size | body
//   body = u64 id | u32 rounds | payload (body_size - 12 bytes, at most max_payload)
// Response (24 bytes):            u64 id | u32 status | u32 0 | u64 result
//   result = digest(payload, rounds) ^ mix(id) for Status::ok, 0 otherwise.
// A connection refused (Status::busy) gets one response, id 0, before it closes.
//
// The id is mixed into the result so that a client detects an answer delivered under the
// wrong id (two requests with the same payload would otherwise have the same result), while
// it can still precompute the expensive part, digest(payload, rounds), once per payload.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace service {

inline constexpr std::size_t frame_prefix = 4;     // u32 body_size
inline constexpr std::size_t request_header = 12;  // u64 id, u32 rounds
inline constexpr std::size_t max_payload = 64 * 1024;
inline constexpr std::size_t max_body = request_header + max_payload;
inline constexpr std::uint32_t max_rounds = 1024;  // more is answered Status::bad_request
inline constexpr std::size_t response_size = 24;

/// What a response says about its request.
enum class Status : std::uint32_t {
  ok = 0,           ///< computed: `result` is the answer
  rejected = 1,     ///< not admitted: the server is shutting down or reached --max-requests
  bad_request = 2,  ///< admitted, but the pipeline's decode refused it (rounds > max_rounds)
  failed = 3,       ///< admitted, but its batch failed in the pipeline
  /// The connection was refused: the server is at its connection cap (or out of descriptors).
  /// Sent unasked, with id 0, as the only bytes on the connection, which then closes; no
  /// request sent on it was read.
  busy = 4,
};

inline void store_u32(std::byte* out, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}
inline void store_u64(std::byte* out, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}
inline std::uint32_t load_u32(const std::byte* in) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t(std::to_integer<std::uint8_t>(in[i])) << (8 * i);
  return v;
}
inline std::uint64_t load_u64(const std::byte* in) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t(std::to_integer<std::uint8_t>(in[i])) << (8 * i);
  return v;
}

/// The fixed part of a request body. Precondition: body.size() >= request_header.
struct RequestHeader {
  std::uint64_t id = 0;
  std::uint32_t rounds = 0;
};
inline RequestHeader parse_request_header(std::span<const std::byte> body) noexcept {
  return {load_u64(body.data()), load_u32(body.data() + 8)};
}

/// Appends the frame of request `id` to `out`.
inline void append_request(std::vector<std::byte>& out, std::uint64_t id, std::uint32_t rounds,
                           std::span<const std::byte> payload) {
  const std::size_t at = out.size();
  out.resize(at + frame_prefix + request_header + payload.size());
  std::byte* p = out.data() + at;
  store_u32(p, static_cast<std::uint32_t>(request_header + payload.size()));
  store_u64(p + 4, id);
  store_u32(p + 12, rounds);
  if (!payload.empty()) std::memcpy(p + 16, payload.data(), payload.size());
}

struct Response {
  std::uint64_t id = 0;
  Status status = Status::ok;
  std::uint64_t result = 0;
};
inline void write_response(std::byte* out, const Response& r) noexcept {
  store_u64(out, r.id);
  store_u32(out + 8, static_cast<std::uint32_t>(r.status));
  store_u32(out + 12, 0);
  store_u64(out + 16, r.result);
}
inline Response read_response(const std::byte* in) noexcept {
  return {load_u64(in), static_cast<Status>(load_u32(in + 8)), load_u64(in + 16)};
}

/// The work a request asks for: `rounds` chained FNV-1a passes over its payload (each pass
/// seeded with the previous one's hash). A serial multiply chain per byte, so its cost grows
/// with payload size times rounds and no compiler folds it away.
inline std::uint64_t digest(std::span<const std::byte> payload, std::uint32_t rounds) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    h ^= r;
    for (std::byte b : payload) {
      h ^= std::to_integer<std::uint8_t>(b);
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

/// splitmix64's finalizer: spreads every bit of `id` over the result.
inline std::uint64_t mix(std::uint64_t id) noexcept {
  id += 0x9e3779b97f4a7c15ULL;
  id = (id ^ (id >> 30)) * 0xbf58476d1ce4e5b9ULL;
  id = (id ^ (id >> 27)) * 0x94d049bb133111ebULL;
  return id ^ (id >> 31);
}

/// The result of an ok response to request `id` whose payload digests to `payload_digest`.
inline std::uint64_t answer_of(std::uint64_t id, std::uint64_t payload_digest) noexcept {
  return payload_digest ^ mix(id);
}

}  // namespace service
