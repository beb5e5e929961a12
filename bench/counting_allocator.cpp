// The global operator new / delete of swp-bench: malloc and free, plus counting (see
// counting_allocator.hpp).

#include "counting_allocator.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

namespace swp_bench {

namespace {

// One counter per slot, each on its own cache line. A thread takes a slot on its first
// allocation; more threads than slots share slots, which stays correct because increments
// are atomic read-modify-writes (relaxed: only the totals matter, not their order relative
// to other memory).
constexpr std::size_t slot_count = 128;
struct alignas(64) Slot {
  std::atomic<std::uint64_t> count{0};
};
Slot slots[slot_count];
std::atomic<std::size_t> next_slot{0};
// A plain int in static TLS: usable in operator new from the first allocation of a thread on.
thread_local int my_slot = -1;

constexpr int site_depth = 10;
constexpr std::size_t site_capacity = 64;
struct Site {
  std::size_t size = 0;
  int frames = 0;
  void* frame[site_depth] = {};
};
Site sites[site_capacity];
// Capture claims an index with fetch_add; the stacks are read only after capture ended.
std::atomic<std::size_t> sites_wanted{0};
std::atomic<std::size_t> sites_claimed{0};
std::atomic<bool> capturing{false};
thread_local bool in_capture = false;  // backtrace() may allocate: never recurse

// The name of the function holding `address` by addr2line (binutils), which also reads the
// static symbol table (internal functions have no dynamic symbol); empty when it fails.
std::string addr2line(const char* object, std::uintptr_t offset) {
  char command[1024];
  std::snprintf(command, sizeof command, "addr2line -f -C -e '%s' 0x%zx 2>/dev/null", object,
                static_cast<std::size_t>(offset));
  std::FILE* pipe = popen(command, "r");
  if (pipe == nullptr) return {};
  char line[4096];
  std::string name;
  if (std::fgets(line, sizeof line, pipe) != nullptr) name = line;
  pclose(pipe);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name == "??" ? std::string() : name;
}

// "object+0xoffset function" for a return address; the offset is what addr2line takes.
std::string symbol_of(void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "?";
  std::string object = info.dli_fname;
  const auto offset =
      reinterpret_cast<std::uintptr_t>(address) - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  std::string name;
  if (info.dli_sname != nullptr) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    name = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
    std::free(demangled);
  } else if (!object.starts_with("/lib") && !object.starts_with("/usr/lib")) {
    // System libraries ship stripped: addr2line would name a wrong, nearby symbol there.
    name = addr2line(info.dli_fname, offset);
  }
  if (name.empty()) name = "(no symbol)";
  if (name.size() > 240) name = name.substr(0, 240) + "...";
  if (const auto slash = object.rfind('/'); slash != std::string::npos) object.erase(0, slash + 1);
  char where[64];
  std::snprintf(where, sizeof where, "+0x%zx ", static_cast<std::size_t>(offset));
  return object + where + name;
}

}  // namespace

// Outside the anonymous namespace and never inlined, so that a recorded stack names them
// (the binary exports its symbols) and print_sites can leave them out.
namespace detail {

[[gnu::noinline]] void count_allocation(std::size_t size) noexcept {
  if (my_slot < 0)
    my_slot = static_cast<int>(next_slot.fetch_add(1, std::memory_order_relaxed) % slot_count);
  slots[my_slot].count.fetch_add(1, std::memory_order_relaxed);
  if (capturing.load(std::memory_order_relaxed) && !in_capture) {
    const std::size_t i = sites_claimed.fetch_add(1, std::memory_order_relaxed);
    if (i < sites_wanted.load(std::memory_order_relaxed) && i < site_capacity) {
      in_capture = true;
      sites[i].size = size;
      sites[i].frames = backtrace(sites[i].frame, site_depth);
      in_capture = false;
    }
  }
}

[[gnu::noinline]] void* allocate(std::size_t size) {
  count_allocation(size);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

[[gnu::noinline]] void* allocate_aligned(std::size_t size, std::align_val_t align) {
  count_allocation(size);
  const auto a = static_cast<std::size_t>(align);
  // aligned_alloc wants a size that is a multiple of the alignment.
  const std::size_t rounded = ((size == 0 ? 1 : size) + a - 1) / a * a;
  if (void* p = std::aligned_alloc(a, rounded)) return p;
  throw std::bad_alloc();
}

}  // namespace detail

std::uint64_t allocations() noexcept {
  std::uint64_t total = 0;
  for (const auto& s : slots) total += s.count.load(std::memory_order_relaxed);
  return total;
}

void prime_site_capture() noexcept {
  void* frame[2];
  in_capture = true;
  backtrace(frame, 2);
  in_capture = false;
}

void start_site_capture(std::size_t count) noexcept {
  sites_claimed.store(0, std::memory_order_relaxed);
  sites_wanted.store(count, std::memory_order_relaxed);
  capturing.store(true, std::memory_order_release);
}

void stop_site_capture() noexcept { capturing.store(false, std::memory_order_release); }

void print_sites(std::FILE* out) {
  const std::size_t n =
      std::min(std::min(sites_claimed.load(), sites_wanted.load()), site_capacity);
  for (std::size_t i = 0; i < n; ++i) {
    std::fprintf(out, "alloc-site %zu: %zu bytes\n", i, sites[i].size);
    // The innermost frames are this file's: count_allocation, allocate, operator new (which
    // may have tail-called allocate and left no frame). Leave them out.
    bool ours = true;
    for (int f = 0; f < sites[i].frames; ++f) {
      const std::string s = symbol_of(sites[i].frame[f]);
      if (ours && (s.find(" swp_bench::detail::") != std::string::npos ||
                   s.find(" operator new") != std::string::npos))
        continue;
      ours = false;
      std::fprintf(out, "  #%d %s\n", f, s.c_str());
    }
  }
  sites_claimed.store(0);
  sites_wanted.store(0);
}

}  // namespace swp_bench

void* operator new(std::size_t size) { return swp_bench::detail::allocate(size); }
void* operator new[](std::size_t size) { return swp_bench::detail::allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return swp_bench::detail::allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return swp_bench::detail::allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t size, std::align_val_t align) {
  return swp_bench::detail::allocate_aligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return swp_bench::detail::allocate_aligned(size, align);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  try {
    return swp_bench::detail::allocate_aligned(size, align);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  try {
    return swp_bench::detail::allocate_aligned(size, align);
  } catch (...) {
    return nullptr;
  }
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
