// Stream's sticky device fault and its observer, shared by every backend.

#include "swp/device/stream.hpp"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <typeinfo>

namespace swp {

namespace {

// "swp::TraceRecorder at 0x5581…": the observer's dynamic type (demangled where the ABI
// can) and its address, which tells two observers of one type apart.
std::string describe_observer(const DeviceObserver& observer) {
  const char* mangled = typeid(observer).name();
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  char address[32];
  std::snprintf(address, sizeof address, "%p", static_cast<const void*>(&observer));
  return std::string(status == 0 && demangled ? demangled.get() : mangled) + " at " + address;
}

}  // namespace

void Stream::set_observer(DeviceObserver* observer) {
  if (observer != nullptr && observer_ != nullptr && observer_ != observer)
    throw std::logic_error("stream '" + name_ + "' already reports to " +
                           describe_observer(*observer_) + "; attaching " +
                           describe_observer(*observer) +
                           " would silently take its place (a runtime's streams are shared by "
                           "its pipelines): detach the first (detach_run_observer, or "
                           "set_observer(nullptr)), or attach one observer that passes the work "
                           "on to both");
  observer_ = observer;
}

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
