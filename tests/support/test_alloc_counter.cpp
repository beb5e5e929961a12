#include "support/alloc_counter.hpp"
#include "swp/async/detail/sanitizers.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#if SWP_ASAN
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>

#include "support/plans.hpp"

#endif

namespace test_alloc_counter {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

// Keeps an allocation from being optimized away: the compiler must assume `p` is used.
void escape(void* p) { asm volatile("" : : "r"(p) : "memory"); }

void allocate_one() {
  auto* p = new int(7);
  escape(p);
  delete p;
}

// Spins until `stage` reaches `s` or 10 s passed.
bool await_stage(const std::atomic<int>& stage, int s) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (stage.load() < s) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("an allocation count remembers the size of the largest allocation") {
  swp::test::AllocationCount count;
  CHECK(count.largest_allocation() == 0);
  auto* small = new char[100];
  escape(small);
  auto* large = new char[5000];
  escape(large);
  auto* medium = new char[700];
  escape(medium);
  const std::size_t largest = count.largest_allocation();
  count.stop();
  delete[] small;
  delete[] large;
  delete[] medium;
  CHECK(largest == 5000);
}

TEST_CASE("an allocation count sees the allocations of tracked threads while it is armed") {
  std::atomic<int> stage{0};
  // Started before the count: creating a thread allocates on the creating thread.
  std::thread untracked([&] {
    if (!await_stage(stage, 1)) return;
    allocate_one();
    stage = 2;
  });
  std::thread tracked([&] {
    if (!await_stage(stage, 3)) return;
    swp::test::track_allocations_on_this_thread();
    allocate_one();
    swp::test::track_allocations_on_this_thread(false);
    stage = 4;
  });
  std::size_t own = 0, with_untracked = 0, with_tracked = 0, after_stop = 0;
  bool ok = false;
  {
    swp::test::AllocationCount count;
    allocate_one();
    own = count.allocations();
    stage = 1;
    ok = await_stage(stage, 2);
    with_untracked = count.allocations();
    stage = 3;
    ok = ok && await_stage(stage, 4);
    with_tracked = count.stop();
    allocate_one();  // disarmed
    after_stop = count.allocations();
  }
  untracked.join();
  tracked.join();
  REQUIRE(ok);
  CHECK(own == 1);
  CHECK(with_untracked == 1);
  CHECK(with_tracked == 2);
  CHECK(after_stop == 2);
}

#if SWP_ASAN

namespace {

// The probe: a copy of this executable started with SWP_TEST_ASAN_PROBE set commits the named
// heap error while it starts, before doctest runs. AddressSanitizer must report it, with the
// allocation counter linked in.
[[maybe_unused]] const int asan_probe = [] {
  const char* probe = std::getenv("SWP_TEST_ASAN_PROBE");
  if (probe == nullptr) return 0;
  const std::string what = probe;
  if (what == "use-after-free") {
    auto* p = new int(1);
    delete p;
    return *static_cast<volatile int*>(p);
  }
  if (what == "new-delete-mismatch") {
    auto* p = new int[4];
    escape(p);
    // The error under test: both compilers see it too (-Wmismatched-new-delete; clang
    // honours GCC's pragmas).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
    delete p;  // NOLINT: the error under test
#pragma GCC diagnostic pop
  }
  return 0;
}();

// Runs this executable with the probe `what`; its exit status and stderr.
std::pair<int, std::string> run_probe(const std::string& what) {
  const swp::test::TempFile err("", ".err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.str().c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  const std::string probe = "SWP_TEST_ASAN_PROBE=" + what;
  const std::string asan = "ASAN_OPTIONS=detect_leaks=0";
  char* argv[] = {const_cast<char*>("swp-tests"), const_cast<char*>("--no-run=true"), nullptr};
  char* envp[] = {const_cast<char*>(probe.c_str()), const_cast<char*>(asan.c_str()), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(spawned == 0);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("the probe '", what, "' did not end within 60 s");
    }
    std::this_thread::sleep_for(10ms);
  }
  return {status, swp::test::read_text(err.path())};
}

}  // namespace

TEST_CASE("AddressSanitizer still reports heap errors with the allocation counter linked") {
  SUBCASE("use after free") {
    const auto [status, err] = run_probe("use-after-free");
    CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(err.find("heap-use-after-free") != std::string::npos);
  }
  SUBCASE("new[] freed with delete") {
    const auto [status, err] = run_probe("new-delete-mismatch");
    CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(err.find("alloc-dealloc-mismatch") != std::string::npos);
  }
}

#endif

}  // namespace test_alloc_counter
