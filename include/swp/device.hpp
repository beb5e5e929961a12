#pragma once
// The device layer: streams and events with the host and sim backends.

#include "swp/device/event.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/sim_device.hpp"
#include "swp/device/stream.hpp"
#include "swp/device/work_tag.hpp"
