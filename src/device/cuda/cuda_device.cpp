#include "swp/device/cuda/cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "cuda_check.hpp"
#include "cuda_native_event.hpp"
#include "cuda_poller.hpp"

namespace swp {

CudaDevice::CudaDevice(int ordinal, CudaCompletion completion)
    : ordinal_(ordinal), completion_(completion) {
  int devices = 0;
  detail::cuda_check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount", "the cuda backend");
  if (ordinal_ < 0) detail::cuda_check(cudaGetDevice(&ordinal_), "cudaGetDevice");
  if (ordinal_ >= devices)
    detail::cuda_check(cudaErrorInvalidDevice, "cudaSetDevice",
                       "device " + std::to_string(ordinal_) + " of " + std::to_string(devices));
  make_current();
  detail::cuda_check(cudaDeviceGetStreamPriorityRange(&priorities_.first, &priorities_.second),
                     "cudaDeviceGetStreamPriorityRange");
  // Polling mode completes items by polling; host-function mode only watches for faults.
  // The poller's thread queries this GPU's events: it makes the GPU current first.
  const auto pace = completion_ == CudaCompletion::polling ? detail::CudaPoller::Pace::polling
                                                           : detail::CudaPoller::Pace::fault_watch;
  poller_ = std::make_unique<detail::CudaPoller>(
      pace, [ordinal = ordinal_] { (void)cudaSetDevice(ordinal); });
}

CudaDevice::~CudaDevice() = default;

int CudaDevice::count() noexcept {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no GPU: nothing to use, not an error here
    return 0;
  }
  return devices;
}

void CudaDevice::make_current() const {
  int current = -1;
  detail::cuda_check(cudaGetDevice(&current), "cudaGetDevice");
  if (current != ordinal_) detail::cuda_check(cudaSetDevice(ordinal_), "cudaSetDevice");
}

void CudaDevice::bind_thread() noexcept {
  // The constructor made this ordinal current once already: setting it again fails only
  // with a broken driver, and then the thread's own CUDA calls fail too.
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != ordinal_) (void)cudaSetDevice(ordinal_);
}

std::unique_ptr<Stream> CudaDevice::make_stream(std::string name) {
  return make_stream(std::move(name), 0);
}

std::unique_ptr<CudaStream> CudaDevice::make_stream(std::string name, int priority) {
  // CUDA numbers priorities from least (e.g. 0) down to greatest (e.g. -5).
  const int clamped = std::clamp(priority, priorities_.second, priorities_.first);
  return std::make_unique<CudaStream>(*this, std::move(name), clamped);
}

std::unique_ptr<Event> CudaDevice::make_event() {
  auto event = std::make_unique<Event>();
  event->attach_native(std::make_unique<detail::CudaNativeEvent>(*this));
  return event;
}

CudaStream* as_cuda(Stream& stream) noexcept { return dynamic_cast<CudaStream*>(&stream); }

namespace detail {

CudaNativeEvent::CudaNativeEvent(const CudaDevice& device) : NativeEvent(device) {
  device.make_current();
  for (auto& event : events_) {
    const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (status != cudaSuccess) {
      for (auto* made : events_)
        if (made != nullptr) (void)cudaEventDestroy(made);
      cuda_check(status, "cudaEventCreateWithFlags");
    }
  }
}

CudaNativeEvent::~CudaNativeEvent() {
  for (auto* event : events_)
    if (event != nullptr) (void)cudaEventDestroy(event);
}

}  // namespace detail

}  // namespace swp
