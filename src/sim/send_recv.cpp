#include "swp/sim/send_recv.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "number_text.hpp"

namespace swp {

namespace {

void check_non_negative(const char* what, std::int64_t value) {
  if (value < 0)
    throw std::invalid_argument(std::string(what) + " " + std::to_string(value) + " is negative");
}

void check_stages(int num_stages) {
  if (num_stages < 1)
    throw std::invalid_argument("stage count " + std::to_string(num_stages) +
                                " must be at least 1");
}

}  // namespace

std::int64_t hidden_states_message_bytes(std::int64_t tokens, std::int64_t hidden,
                                         std::int64_t dtype_bytes) {
  check_non_negative("token count", tokens);
  check_non_negative("hidden size", hidden);
  check_non_negative("dtype size", dtype_bytes);
  std::int64_t product = 0;
  if (__builtin_mul_overflow(tokens, hidden, &product) ||
      __builtin_mul_overflow(product, dtype_bytes, &product))
    throw std::overflow_error("message of " + std::to_string(tokens) + " tokens x " +
                              std::to_string(hidden) + " hidden x " + std::to_string(dtype_bytes) +
                              " bytes exceeds int64");
  return product;
}

double LinkModel::one_way_us(std::int64_t bytes) const {
  check_non_negative("message size", bytes);
  if (!(latency_us >= 0) || !std::isfinite(latency_us))
    throw std::invalid_argument("link latency " + detail::number_text(latency_us) +
                                " us must be finite and >= 0");
  if (!(bandwidth_gbps > 0) || !std::isfinite(bandwidth_gbps))
    throw std::invalid_argument("link bandwidth " + detail::number_text(bandwidth_gbps) +
                                " GB/s must be finite and > 0");
  // bytes / (G · 1e9 B/s) seconds = bytes / (G · 1e3) microseconds.
  return latency_us + static_cast<double>(bytes) / (bandwidth_gbps * 1e3);
}

std::vector<SendRecvEvent> send_recv_events(int num_stages, std::int64_t message_bytes,
                                            const LinkModel& link) {
  check_stages(num_stages);
  const double one_way = link.one_way_us(message_bytes);
  std::vector<SendRecvEvent> events;
  for (int s = 0; s + 1 < num_stages; ++s)
    events.push_back(SendRecvEvent{s, s + 1, message_bytes, one_way});
  return events;
}

std::vector<double> stage_comm_us(int num_stages, std::int64_t message_bytes,
                                  const LinkModel& link) {
  check_stages(num_stages);
  const double one_way = link.one_way_us(message_bytes);
  std::vector<double> comm(static_cast<std::size_t>(num_stages), 0.0);
  if (num_stages == 1 || message_bytes == 0) return comm;
  for (int s = 0; s < num_stages; ++s) {
    const double incoming = s > 0 ? one_way : 0.0;
    const double outgoing = s + 1 < num_stages ? one_way : 0.0;
    comm[static_cast<std::size_t>(s)] = incoming + outgoing;
  }
  return comm;
}

}  // namespace swp
