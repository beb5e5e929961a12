#pragma once
// Stage-boundary send/recv of hidden states: message size, one-way time, and the
// communication each stage pays (seed 002, section 2.7).

#include <cstdint>
#include <vector>

namespace swp {

/// message_bytes = tokens · hidden · dtype_bytes. Throws std::invalid_argument naming the
/// argument when one is negative, std::overflow_error when the product exceeds int64.
std::int64_t hidden_states_message_bytes(std::int64_t tokens, std::int64_t hidden,
                                         std::int64_t dtype_bytes);

/// A point-to-point link between adjacent stages: a fixed latency plus a bandwidth.
struct LinkModel {
  double latency_us = 0;
  double bandwidth_gbps = 1;  ///< in 1e9 bytes per second (GB/s, not Gbit/s)

  /// one_way = latency + bytes / bandwidth, in microseconds. Throws std::invalid_argument
  /// for a negative latency or byte count, or a bandwidth that is not positive.
  [[nodiscard]] double one_way_us(std::int64_t bytes) const;
};

/// One logical transfer: stage `src_stage` sends `message_bytes` of hidden states to
/// `dst_stage` (= src + 1), taking `time_us` one way.
struct SendRecvEvent {
  int src_stage = 0;
  int dst_stage = 0;
  std::int64_t message_bytes = 0;
  double time_us = 0;
  friend bool operator==(const SendRecvEvent&, const SendRecvEvent&) = default;
};

/// The S − 1 stage-boundary transfers of one microbatch, in stage order (none for S = 1).
/// Throws std::invalid_argument for S < 1.
std::vector<SendRecvEvent> send_recv_events(int num_stages, std::int64_t message_bytes,
                                            const LinkModel& link);

/// What each stage pays for communication, incoming + outgoing: the first stage only
/// sends, middle stages receive and send, the last only receives; every stage pays nothing
/// when there is one stage or the message is empty.
///
/// Example: 3 stages, one way 2 us → {2, 4, 2}.
std::vector<double> stage_comm_us(int num_stages, std::int64_t message_bytes,
                                  const LinkModel& link);

}  // namespace swp
