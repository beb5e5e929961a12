#pragma once
// StreamLimitError: a device's limit on its streams refused a new stream.

#include <stdexcept>
#include <string>
#include <utility>

namespace swp {

/// A device's stream limit refused to make a stream. Thrown by HostDevice::make_stream when
/// the device already has HostDeviceOptions::max_streams streams (on a Runtime:
/// RuntimeOptions::max_host_streams), and by Runtime::stream when making the stream would take
/// the last place of a device with a limit (Device::streams_left) while the place is kept for
/// the stream "default". A Runtime makes a plan's streams when a pipeline is constructed, so
/// this is what a pipeline's constructor throws for a plan with more streams than the limit
/// allows; nothing ran. A std::length_error, as before this type existed: a handler of that
/// catches it too, and one of this type tells it apart from any other length_error (a
/// container's, a plan of 2^31 tasks), as `swp run` and `swp profile` do to name
/// `--max-host-streams`.
///
/// Example: `try { swp::DataFlowPipeline<Ctx> pipe(rt, plan, 3); }
///           catch (const swp::StreamLimitError& e) { log(e.stream(), e.what()); }`
/// what(): "host device: cannot make stream 's4': the device has 4 streams, its limit (...)".
class StreamLimitError : public std::length_error {
 public:
  /// `what`: the whole message, which names the stream, the limit and how to raise it.
  StreamLimitError(std::string stream, const std::string& what)
      : std::length_error(what), stream_(std::move(stream)) {}

  /// The name of the stream that was refused.
  [[nodiscard]] const std::string& stream() const noexcept { return stream_; }

 private:
  std::string stream_;
};

}  // namespace swp
