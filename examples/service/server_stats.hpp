#pragma once
// ServerStats: what the micro-batch server counts, readable while it runs.

#include <atomic>
#include <cstdint>
#include <iomanip>
#include <ostream>

namespace service {

/// Counters, updated from any thread (relaxed: each is a tally read at the end or polled by a
/// test; none orders other memory). Every request a client sent whole is either `admitted`
/// (taken into a batch) or `rejected`; every admitted one is answered by the pipeline
/// (`answered_ok` + `bad_requests` + `failed`) unless its batch could not be submitted
/// (`lost`, which only a bug makes non-zero); every response is `delivered` (written to
/// its socket) or `dropped` (its client had gone, or was closed by a deadline).
/// Every connection accepted is either `refused` (over the connection cap, or out of
/// descriptors) or counted in `connections`.
struct ServerStats {
  std::atomic<std::uint64_t> connections{0};
  std::atomic<std::uint64_t> refused{0};  // answered Status::busy and closed at once
  std::atomic<std::uint64_t> open_connections{0};
  std::atomic<std::uint64_t> peak_connections{0};
  std::atomic<std::uint64_t> idle_timeouts{0};   // closed: nothing moved for idle_timeout
  std::atomic<std::uint64_t> frame_timeouts{0};  // closed: a frame not whole in frame_timeout
  std::atomic<std::uint64_t> admitted{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> answered_ok{0};
  std::atomic<std::uint64_t> bad_requests{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> delivered{0};
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> lost{0};             // admitted, never answered: their submit failed
  std::atomic<std::uint64_t> protocol_errors{0};  // connections closed for a malformed frame
  std::atomic<std::uint64_t> batches{0};          // iterations the pipeline retired or failed
  std::atomic<std::uint64_t> read_pauses{0};      // times back-pressure parked a connection
  std::atomic<std::uint64_t> write_pauses{0};     // times unwritten answers paused a connection
  std::atomic<std::uint64_t> peak_unwritten{0};   // most answer bytes one connection had queued
  std::atomic<std::uint64_t> in_server{0};        // admitted, not answered yet
  std::atomic<std::uint64_t> peak_in_server{0};   // the most in_server ever was
  std::atomic<std::uint64_t> reniced_streams{0};  // stream threads given ServerOptions::stream_nice

  /// `n` requests were admitted: in_server grows, and its peak with it.
  void admit(std::uint64_t n) noexcept {
    add(admitted, n);
    raise_peak(peak_in_server, in_server.fetch_add(n, std::memory_order_relaxed) + n);
  }
  /// `n` admitted requests were answered (or lost).
  void settle(std::uint64_t n) noexcept { in_server.fetch_sub(n, std::memory_order_relaxed); }

  /// A connection has `bytes` of answers queued for writing.
  void note_unwritten(std::uint64_t bytes) noexcept { raise_peak(peak_unwritten, bytes); }

  /// A connection opened, or closed.
  void opened() noexcept {
    add(connections);
    raise_peak(peak_connections, open_connections.fetch_add(1, std::memory_order_relaxed) + 1);
  }
  void closed() noexcept { open_connections.fetch_sub(1, std::memory_order_relaxed); }

  /// Raises `peak` to `value` if it is below.
  static void raise_peak(std::atomic<std::uint64_t>& peak, std::uint64_t value) noexcept {
    std::uint64_t seen = get(peak);
    while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }

  static std::uint64_t get(const std::atomic<std::uint64_t>& v) noexcept {
    return v.load(std::memory_order_relaxed);
  }
  static void add(std::atomic<std::uint64_t>& v, std::uint64_t n = 1) noexcept {
    v.fetch_add(n, std::memory_order_relaxed);
  }

  /// Requests the pipeline answered (whatever the status).
  [[nodiscard]] std::uint64_t answered() const noexcept {
    return get(answered_ok) + get(bad_requests) + get(failed);
  }

  /// The counters as `metric server_<name> <value> <unit>` lines.
  void print(std::ostream& out) const {
    const auto line = [&](const char* name, std::uint64_t value, const char* unit) {
      out << "metric server_" << name << ' ' << value << ' ' << unit << '\n';
    };
    line("connections", get(connections), "count");
    line("refused", get(refused), "count");
    line("peak_connections", get(peak_connections), "count");
    line("idle_timeouts", get(idle_timeouts), "count");
    line("frame_timeouts", get(frame_timeouts), "count");
    line("admitted", get(admitted), "count");
    line("answered", answered(), "count");
    line("rejected", get(rejected), "count");
    line("bad_requests", get(bad_requests), "count");
    line("failed", get(failed), "count");
    line("lost", get(lost), "count");
    line("delivered", get(delivered), "count");
    line("dropped", get(dropped), "count");
    line("protocol_errors", get(protocol_errors), "count");
    line("batches", get(batches), "count");
    const auto batches_done = get(batches);
    out << "metric server_mean_batch " << std::fixed << std::setprecision(1)
        << (batches_done ? double(get(admitted)) / double(batches_done) : 0.0) << " requests\n";
    out << std::defaultfloat;
    line("read_pauses", get(read_pauses), "count");
    line("write_pauses", get(write_pauses), "count");
    line("peak_unwritten", get(peak_unwritten), "bytes");
    line("peak_in_server", get(peak_in_server), "requests");
    line("reniced_streams", get(reniced_streams), "count");
  }
};

}  // namespace service
