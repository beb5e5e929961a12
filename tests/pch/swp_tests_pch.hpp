// Precompiled for every file of swp-tests (tests/meson.build): the headers most of them parse.
// Parsing these once instead of in each of the ~120 test files takes a fifth off the suite's
// build (docs/building.md, "The test suite's stages and their cost"). Only what is stable and
// included widely belongs here: doctest, the standard library, the engines' public headers.
// A test file still includes what it uses itself (builds with -Db_pch=false must compile).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "swp/async/sync_wait.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
