#pragma once
// NativeEvent: a backend's own handle behind an swp::Event (the cuda backend's cudaEvent_t).

namespace swp {

class Device;

/// What a backend with device-side events keeps inside an swp::Event: the cuda backend's
/// cudaEvent_t, which its streams record (`cudaEventRecord`) and wait for
/// (`cudaStreamWaitEvent`) without the CPU in between. The Event's generation counter and
/// waiters stay the CPU's view of the same point. Host and sim events have none.
///
/// It belongs to the device that made it (`owner()`): a stream uses it only when it is its
/// own device's, so a handle is never used with the wrong backend or context.
/// Lifetime: owned by its Event (see Event::attach_native), destroyed with it.
class NativeEvent {
 public:
  explicit NativeEvent(const Device& owner) noexcept : owner_(&owner) {}
  virtual ~NativeEvent() = default;
  NativeEvent(const NativeEvent&) = delete;
  NativeEvent& operator=(const NativeEvent&) = delete;

  [[nodiscard]] const Device& owner() const noexcept { return *owner_; }

 private:
  const Device* owner_;
};

}  // namespace swp
