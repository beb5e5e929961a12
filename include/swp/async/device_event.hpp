#pragma once
// DeviceEvent: the device-side half of a dependency, as the async layer sees it.

namespace swp {

/// A point in a device stream's work (a recorded CUDA event, a host-stream marker, a simulated
/// one). The async layer only carries it from producer to consumer inside a Future; the device
/// layer implements it and knows how to make another stream wait for it.
class DeviceEvent {
 public:
  DeviceEvent() = default;
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;

  /// True once the device has passed the recorded point.
  [[nodiscard]] virtual bool query() const noexcept = 0;

 protected:
  ~DeviceEvent() = default;
};

}  // namespace swp
