#pragma once
// Counting of global operator new calls in swp-bench, for the allocations-per-task figures.
//
// counting_allocator.cpp replaces the global operator new / delete (every form: plain, array,
// nothrow, aligned) of the whole process, swp's shared library and oneTBB included. Every call
// of operator new is counted, on every thread, always: a relaxed increment of a per-thread
// counter slot, so counting costs a few nanoseconds per allocation and threads do not share
// a cache line. Allocations that bypass operator new (plain malloc) are not counted.

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace swp_bench {

/// Calls of operator new so far, all threads together. Reading it while other threads
/// allocate gives a value between the counts before and after the concurrent calls.
std::uint64_t allocations() noexcept;

/// Records the call stacks of the next `count` allocations (at most AllocSites::capacity),
/// from any thread; stop_site_capture() ends it early. Recording costs a stack walk per
/// allocation: use it outside timed windows.
void start_site_capture(std::size_t count) noexcept;
void stop_site_capture() noexcept;

/// Writes the recorded stacks to `out` (one block per allocation: its size, then one symbolized
/// frame a line, innermost first, operator new itself left out) and forgets them.
void print_sites(std::FILE* out);

/// Primes the stack walker (its first use loads libgcc_s, which allocates), so that later
/// captures inside operator new do not recurse into loading.
void prime_site_capture() noexcept;

}  // namespace swp_bench
