#pragma once
// Waiting in a test for what another thread does, without asserting a wall-clock tolerance:
// the limit only ends a test whose condition never comes (a hang), however busy the machine.

#include <chrono>
#include <thread>

namespace swp::test {

/// Spins (yielding) until `pred` holds or `limit` passes; returns pred().
template <class Pred>
bool eventually(Pred pred, std::chrono::steady_clock::duration limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::yield();
  }
  return true;
}

}  // namespace swp::test
