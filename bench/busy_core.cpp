#include "busy_core.hpp"

#include <pthread.h>
#include <sched.h>

namespace swp_bench {

namespace {

// The highest-numbered core in the process's affinity mask, or -1.
int last_allowed_core() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

}  // namespace

BusyCore::BusyCore() {
  const int core = last_allowed_core();
  thread_ = std::thread([this] {
    // A plain counter the compiler must keep updating, so the loop is real work and not a
    // pause-and-wait spin.
    volatile unsigned long spins = 0;
    while (!stop_.load(std::memory_order_relaxed)) spins = spins + 1;
  });
  if (core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (pthread_setaffinity_np(thread_.native_handle(), sizeof set, &set) == 0) core_ = core;
  }
}

BusyCore::~BusyCore() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

}  // namespace swp_bench
