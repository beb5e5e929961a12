#pragma once
// Umbrella header: everything public in swp.

#include "swp/config.hpp"
#include "swp/core.hpp"
