#pragma once
// The device layer: devices, streams and events; the host and sim backends (cuda: include
// swp/device/cuda/cuda_device.hpp where SWP_HAVE_CUDA).

#include "swp/device/backends.hpp"
#include "swp/device/device_fault.hpp"
#include "swp/device/event.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/sim_device.hpp"
#include "swp/device/stream.hpp"
#include "swp/device/stream_limit_error.hpp"
#include "swp/device/work_tag.hpp"
