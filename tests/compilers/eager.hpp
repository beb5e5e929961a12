#pragma once
// Eager: the smallest coroutine type, for the compiler probes in tests/compilers/ — it starts
// at once, runs to its end on the caller's thread and frees its own frame; no library involved.

#include <coroutine>
#include <exception>

namespace compiler_probe {

struct Eager {
  struct promise_type {
    Eager get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

}  // namespace compiler_probe
