#pragma once
// The MPI tests' wait for an operation: its stream ran everything queued so far.

#include <doctest/doctest.h>

#include "swp/async/future.hpp"
#include "swp/device/stream.hpp"

namespace swp::test {

// The operation's future, once the stream ran everything queued so far.
inline void finish(swp::Stream& stream, const swp::Future<void>& done) {
  stream.synchronize();
  REQUIRE(done.ready());
  done.get();
}

}  // namespace swp::test
