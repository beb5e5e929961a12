#pragma once
// ThreadTimes: what the kernel says the calling thread spent, on a CPU and waiting for one.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace service {

/// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and the time it waited on a run
/// queue for a CPU (the second field of /proc/thread-self/schedstat; -1 ns where the kernel
/// does not say), since it started. The difference of two samples on one thread is what the
/// thread spent between them: wall time beyond cpu + wait is time the CPU itself was taken
/// away (a hypervisor's), and CPU time that grows for the same work is a CPU running slower.
struct ThreadTimes {
  std::chrono::nanoseconds cpu{0};
  std::chrono::nanoseconds wait{0};

  /// A sample of the calling thread. The schedstat file stays open per thread (one pread).
  static ThreadTimes now() noexcept { return {cpu_time(), run_queue_wait()}; }

  /// What was spent from `start` to this sample (wait stays -1 ns if either did not say).
  ThreadTimes operator-(const ThreadTimes& start) const noexcept {
    const bool known = wait.count() >= 0 && start.wait.count() >= 0;
    return {cpu - start.cpu, known ? wait - start.wait : std::chrono::nanoseconds(-1)};
  }

  static std::chrono::nanoseconds cpu_time() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  }

  static std::chrono::nanoseconds run_queue_wait() noexcept {
    struct File {
      int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
      ~File() {
        if (fd >= 0) ::close(fd);
      }
    };
    thread_local const File file;
    char text[96];
    const ssize_t n = file.fd < 0 ? -1 : ::pread(file.fd, text, sizeof text - 1, 0);
    if (n <= 0) return std::chrono::nanoseconds(-1);
    text[n] = '\0';
    char* end = nullptr;
    std::strtoull(text, &end, 10);  // "<on a CPU> <waiting> <timeslices>"
    return std::chrono::nanoseconds(static_cast<std::int64_t>(std::strtoull(end, &end, 10)));
  }
};

}  // namespace service
