#include "busy_core.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

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

// The child's whole life. Only system calls: the parent may already run threads, and after a
// fork only async-signal-safe functions are safe in the child.
[[noreturn]] void spin_until_killed(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);  // the parent died before prctl took effect
  volatile unsigned long spins = 0;
  for (;;) spins = spins + 1;
}

}  // namespace

BusyCore::BusyCore() {
  const pid_t parent = getpid();
  const int core = last_allowed_core();
  pid_ = fork();
  if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork of the co-runner");
  if (pid_ == 0) spin_until_killed(parent);
  // Pinned by the parent, which then knows whether it worked.
  if (core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(pid_, sizeof set, &set) == 0) core_ = core;
  }
}

BusyCore::~BusyCore() {
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace swp_bench
