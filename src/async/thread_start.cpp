#include "swp/async/thread_start.hpp"

#include <pthread.h>

#include <cstdio>
#include <string_view>

namespace swp {

namespace {

// "swp-worker3", "swp-lane:<lane>", "swp-stream:<stream>", cut to the 15 characters (plus
// the terminator) pthread_setname_np accepts on Linux. Written into `name` without allocating:
// a thread may start late, inside a window where a benchmark counts the process's allocations.
void thread_name(const ThreadStart& start, char (&name)[16]) {
  const auto with = [&](const char* prefix, std::string_view what) {
    // An empty view may hold a null pointer, which %.*s must not get (g++ warns at -O1+).
    std::snprintf(name, sizeof name, "%s%.*s", prefix, static_cast<int>(what.size()),
                  what.empty() ? "" : what.data());
  };
  switch (start.role) {
    case ThreadStart::Role::worker:
      std::snprintf(name, sizeof name, "swp-worker%u", start.index);
      break;
    case ThreadStart::Role::lane:
      with("swp-lane:", start.name);
      break;
    case ThreadStart::Role::stream:
      with("swp-stream:", start.name);
      break;
    case ThreadStart::Role::timer:
      with("swp-timers", {});
      break;
  }
}

}  // namespace

void begin_thread(const ThreadStart& start, const ThreadStartHook& hook) noexcept {
  // A name is a convenience: failing to set one changes nothing else.
  char name[16] = {};
  thread_name(start, name);
  (void)pthread_setname_np(pthread_self(), name);
  if (hook) hook(start);
}

}  // namespace swp
