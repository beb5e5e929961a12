#pragma once
// Polling: how a thread waiting for work pauses between looks without touching shared memory,
// and how it spaces its looks out (ThreadPoolScheduler's idle workers and drivers).

#include <sched.h>

#include <algorithm>

namespace swp::detail {

// Pause instructions per polling round.
constexpr unsigned pauses_per_round = 8;

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// One polling round's pause: a few hundred cycles without touching shared memory, so a
// polling thread neither floods the cache lines its victims write nor reacts late.
inline void pause_round() noexcept {
  for (unsigned i = 0; i < pauses_per_round; ++i) cpu_relax();
}

// A poller that keeps finding nothing looks less and less often, down to one look per this
// long: every look reads the lines its victims write, and each read costs the victim a cache
// miss on its next push or pop. Also the window over which a look tells an owner's pace.
constexpr double max_look_interval_ns = 3200;

// The rounds between a poller's look number `looks` and its next one: doubling from one up to
// `max_rounds`.
inline unsigned rounds_to_next_look(unsigned looks, unsigned max_rounds) noexcept {
  return std::min(1U << std::min(looks, 31U), max_rounds);
}

// Pauses until a poller's next look (see rounds_to_next_look); returns the rounds paused.
// At the slowest pace it also yields its core: a thread that polls on beside a busy pipeline
// (ThreadPoolScheduler::worker_idle) would otherwise keep its core for its whole time slice
// while the pipeline's other thread, or another process, waits for it there. Beside a process
// spinning on one of two cores that made the 1 and 5 µs dispatch chains 1.3-1.4x slower than
// Taskflow's; yielding, 0.94-1.09x. On an idle core the call returns at once, once per
// max_look_interval_ns, which costs the quiet chains nothing measurable (docs/benchmarks.md).
inline unsigned back_off(unsigned looks, unsigned max_rounds) noexcept {
  const unsigned rounds = rounds_to_next_look(looks, max_rounds);
  for (unsigned r = 0; r < rounds; ++r) pause_round();
  if (rounds == max_rounds) sched_yield();
  return rounds;
}

// How long one pause_round() takes on this machine, in ns (measured once per process).
double pause_round_ns();

}  // namespace swp::detail
