// A sampling profiler for machines without perf (the CI kind and the GPU machines have no
// hardware counters): loaded with LD_PRELOAD, it arms a CLOCK_MONOTONIC timer that signals the
// process every SWP_SAMPLE_US microseconds; the handler records the interrupted instruction
// pointer. At exit it writes one "module offset" line per sample to SWP_SAMPLE_OUT, the
// offset relative to the module's load address, for tools/sample-pc/report.py.
//
// A sample lands on the oldest instruction not yet retired, so a stall shows on the
// instruction that waits (a load's consumer, the branch after it), not on its cause.
// Each signal costs a few microseconds: one every 100 µs slowed the dispatch chain by 10-20%,
// one every 250 µs by 5-8%.
#include <dlfcn.h>
#include <signal.h>
#include <time.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr std::size_t kMaxSamples = std::size_t{1} << 22;
void* samples[kMaxSamples];
std::atomic<std::size_t> taken{0};
timer_t timer;
bool armed = false;

void on_signal(int, siginfo_t*, void* context) {
  // Async-signal-safe: one atomic increment and one store.
  const auto* uc = static_cast<const ucontext_t*>(context);
  const std::size_t i = taken.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples) samples[i] = reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
}

__attribute__((constructor)) void start() {
  const char* interval = std::getenv("SWP_SAMPLE_US");
  if (interval == nullptr || std::getenv("SWP_SAMPLE_OUT") == nullptr) return;
  const long us = std::max(10L, std::atol(interval));
  struct sigaction action {};
  action.sa_sigaction = on_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &action, nullptr);
  sigevent event{};
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGPROF;
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return;
  const timespec period{us / 1000000, (us % 1000000) * 1000};
  const itimerspec spec{period, period};
  armed = timer_settime(timer, 0, &spec, nullptr) == 0;
}

__attribute__((destructor)) void stop() {
  if (!armed) return;
  const itimerspec off{};
  timer_settime(timer, 0, &off, nullptr);
  FILE* out = std::fopen(std::getenv("SWP_SAMPLE_OUT"), "w");
  if (out == nullptr) return;
  const std::size_t n = std::min(taken.load(), kMaxSamples);
  for (std::size_t i = 0; i < n; ++i) {
    Dl_info info;
    if (dladdr(samples[i], &info) != 0 && info.dli_fname != nullptr) {
      std::fprintf(out, "%s %lx\n", info.dli_fname,
                   static_cast<unsigned long>(static_cast<char*>(samples[i]) -
                                              static_cast<char*>(info.dli_fbase)));
    } else {
      std::fprintf(out, "? %p\n", samples[i]);
    }
  }
  std::fclose(out);
  if (taken.load() > kMaxSamples)
    std::fprintf(stderr, "sample-pc: %zu samples, the first %zu kept\n", taken.load(), kMaxSamples);
}

}  // namespace
