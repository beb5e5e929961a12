#pragma once
// DeviceFault: a stream's device failed (a kernel fault on a GPU, or one injected on host/sim).

#include <stdexcept>
#include <string>

namespace swp {

/// A device fault on a stream: a kernel hit an illegal address (cuda: a sticky error of the
/// whole context), or a fault injected with Stream::enqueue_fault (host, sim). Sticky: once a
/// stream faulted, its later work does not run, every event recorded on it completes failed
/// (Event::error) so that no waiter hangs, a stream that waits on such an event faults too,
/// and synchronize() throws this. The engines fail the run with a TaskError naming the task
/// whose device work faulted and the iteration, nesting this.
///
/// Example: `catch (const swp::TaskError& e) { try { std::rethrow_exception(e.nested()); }
///           catch (const swp::DeviceFault& f) { log(f.stream(), f.what()); } }`
/// what(): "stream 'compute' faulted: illegal address in kernel 'gather'".
class DeviceFault : public std::runtime_error {
 public:
  DeviceFault(std::string stream, const std::string& what)
      : std::runtime_error("stream '" + stream + "' faulted: " + what), stream_(std::move(stream)) {}

  /// The stream that faulted first (where the error was seen).
  [[nodiscard]] const std::string& stream() const noexcept { return stream_; }

 private:
  std::string stream_;
};

}  // namespace swp
