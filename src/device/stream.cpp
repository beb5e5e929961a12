// Stream's sticky device fault, shared by every backend.

#include "swp/device/stream.hpp"

namespace swp {

std::exception_ptr Stream::fault() const {
  if (!faulted()) return nullptr;
  std::lock_guard lock(fault_mutex_);
  return fault_;
}

bool Stream::set_fault(std::exception_ptr error) noexcept {
  std::lock_guard lock(fault_mutex_);
  if (fault_) return false;
  fault_ = std::move(error);
  faulted_.store(true, std::memory_order_release);
  return true;
}

}  // namespace swp
