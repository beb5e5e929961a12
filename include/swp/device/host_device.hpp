#pragma once
// The host backend: every stream is a FIFO worker thread emulating device time.

#include <utility>

#include "swp/device/stream.hpp"

namespace swp {

/// Streams with real asynchrony on the CPU: each stream owns a worker thread ("swp-stream:<name>",
/// see ThreadStart) that processes its queue in order. Synthetic work is timed against the stream's
/// emulated clock (start = max(enqueue time, previous end, awaited events' completion)), and the
/// worker sleeps until that end, so completions are never early and sleep overshoot never
/// accumulates.
///
/// Example: `swp::HostDevice dev; auto s = dev.make_stream("memcpy");`
class HostDevice final : public Device {
 public:
  std::unique_ptr<Stream> make_stream(std::string name) override;
  [[nodiscard]] std::string_view backend() const noexcept override { return "host"; }
  void on_thread_start(ThreadStartHook hook) override { on_thread_start_ = std::move(hook); }

 private:
  ThreadStartHook on_thread_start_;
};

}  // namespace swp
