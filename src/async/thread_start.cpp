#include "swp/async/thread_start.hpp"

#include <pthread.h>

#include <algorithm>
#include <string>

namespace swp {

namespace {

// "swp-worker3", "swp-lane:<lane>", "swp-stream:<stream>", cut to the 15 characters (plus
// the terminator) pthread_setname_np accepts on Linux.
std::string thread_name(const ThreadStart& start) {
  std::string name;
  switch (start.role) {
    case ThreadStart::Role::worker:
      name = "swp-worker" + std::to_string(start.index);
      break;
    case ThreadStart::Role::lane:
      name = "swp-lane:" + std::string(start.name);
      break;
    case ThreadStart::Role::stream:
      name = "swp-stream:" + std::string(start.name);
      break;
    case ThreadStart::Role::timer:
      name = "swp-timers";
      break;
  }
  name.resize(std::min<std::size_t>(name.size(), 15));
  return name;
}

}  // namespace

void begin_thread(const ThreadStart& start, const ThreadStartHook& hook) noexcept {
  // A name is a convenience: failing to set one changes nothing else.
  (void)pthread_setname_np(pthread_self(), thread_name(start).c_str());
  if (hook) hook(start);
}

}  // namespace swp
