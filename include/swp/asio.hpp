#pragma once
// swp with Boost.Asio: lanes on a caller's executor (AsioScheduler) and the completion-token
// form of progress() (swp::async_progress). Not part of `swp/swp.hpp`, which includes no Asio
// header; include this one next to it where a pipeline lives inside an Asio service.

#include "swp/async/asio_scheduler.hpp"
#include "swp/engine/asio.hpp"
#include "swp/engine/asio_runtime.hpp"
