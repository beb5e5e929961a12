#pragma once
// The host backend: every stream is a FIFO worker thread emulating device time.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

#include "swp/device/stream.hpp"

namespace swp {

namespace detail {
struct HostStreamCounts;
}  // namespace detail

/// The default of HostDeviceOptions::max_streams and RuntimeOptions::max_host_streams.
inline constexpr std::size_t default_max_host_streams = 1024;

/// What a HostDevice allows its streams.
struct HostDeviceOptions {
  /// The most streams the device has at once (made and not destroyed yet). Each host stream may
  /// run a thread of its own, so this bounds the threads any plan can make the host backend
  /// start. make_stream past it throws swp::StreamLimitError (swp/device/stream_limit_error.hpp,
  /// a std::length_error) naming the stream, the count and this option, so a pipeline whose
  /// plan has more streams fails while it is constructed (its streams are made then), not
  /// mid-run. A Runtime on the device keeps one of these places for its "default" stream until
  /// that exists (Runtime::stream), so there a plan may name max_streams - 1 streams besides
  /// "default". At least 1.
  std::size_t max_streams = default_max_host_streams;
  /// How long a stream's thread waits for its next item before it exits (a stream idle that
  /// long holds no thread); the next item queued starts a new one, which begins with the
  /// thread-start hook again. Long enough that a steady pipeline, or a service between
  /// requests a few seconds apart, never pays a thread start. Clock::duration::max(): never.
  Clock::duration idle_exit = std::chrono::seconds(5);
};

/// Streams with real asynchrony on the CPU: each stream runs its queue in order on a worker
/// thread of its own ("swp-stream:<name>", see ThreadStart), started with the stream's first
/// item and gone after HostDeviceOptions::idle_exit without one (the next item starts another).
/// Synthetic work is timed against the stream's emulated clock (start = max(enqueue time,
/// previous end, awaited events' completion)), and the worker sleeps until that end, so
/// completions are never early and sleep overshoot never accumulates.
///
/// Example: `swp::HostDevice dev({.max_streams = 64}); auto s = dev.make_stream("memcpy");`
class HostDevice final : public Device {
 public:
  /// Errors: std::invalid_argument for options.max_streams == 0.
  explicit HostDevice(HostDeviceOptions options = {});
  ~HostDevice() override;

  /// A new stream called `name`. Errors: swp::StreamLimitError (a std::length_error) naming
  /// `name`, the limit and HostDeviceOptions::max_streams (RuntimeOptions::max_host_streams) when
  /// the device already has options().max_streams streams. Thread-safe.
  std::unique_ptr<Stream> make_stream(std::string name) override;
  [[nodiscard]] std::string_view backend() const noexcept override { return "host"; }
  void on_thread_start(ThreadStartHook hook) override { on_thread_start_ = std::move(hook); }

  [[nodiscard]] const HostDeviceOptions& options() const noexcept { return options_; }
  /// The streams of this device that exist now (what max_streams limits). Any thread.
  [[nodiscard]] std::size_t streams() const noexcept;
  /// max_streams less streams(): how many more make_stream makes now. Any thread.
  [[nodiscard]] std::optional<std::size_t> streams_left() const noexcept override;
  /// The streams' threads running now: at most streams(). Any thread.
  [[nodiscard]] std::size_t stream_threads() const noexcept;

 private:
  HostDeviceOptions options_;
  std::shared_ptr<detail::HostStreamCounts> counts_;  // shared: streams may outlive the device
  ThreadStartHook on_thread_start_;
};

}  // namespace swp
