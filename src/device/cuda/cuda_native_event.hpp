#pragma once
// The CUDA events inside an swp::Event (private to src/device/cuda).

#include <array>
#include <cstdint>

#include "swp/device/native_event.hpp"

struct CUevent_st;

namespace swp {
class CudaDevice;
}

namespace swp::detail {

/// A few CUDA events (timing disabled) taking the generations of one swp::Event in turn:
/// generation g is recorded into events[g % ring], so a wait for g finds its own record as
/// long as the event was recorded fewer than `ring` times since.
class CudaNativeEvent final : public NativeEvent {
 public:
  static constexpr std::uint64_t ring = 4;

  /// Creates the CUDA events on `device` (CudaError when that fails).
  explicit CudaNativeEvent(const CudaDevice& device);
  ~CudaNativeEvent() override;

  [[nodiscard]] CUevent_st* of(std::uint64_t generation) const noexcept {
    return events_[generation % ring];
  }

 private:
  std::array<CUevent_st*, ring> events_{};
};

}  // namespace swp::detail
