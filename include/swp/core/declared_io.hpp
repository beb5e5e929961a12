#pragma once
// DeclaredIO: a task's contract with shared state outside its iteration context (seed 003).

#include <any>
#include <functional>
#include <utility>

namespace swp {

/// Declares that a task reads and writes state outside the per-iteration context.
///
/// The engine calls `capture` right after the task ran while its shortcut is caching, stores
/// the returned snapshot, and calls `restore(snapshot)` every time the shortcut replays the task
/// instead of running it. Normal (non-shortcut) execution never calls either.
///
/// Example:
/// ```
/// std::map<std::string, int> shared_buffer;
/// auto io = swp::declared_io<std::map<std::string, int>>(
///     [&] { return shared_buffer; },
///     [&](const auto& saved) { shared_buffer = saved; });
/// ```
struct DeclaredIO {
  std::function<std::any()> capture;
  std::function<void(const std::any&)> restore;
};

/// Builds a DeclaredIO whose snapshot has the static type `T`, so `restore` receives a `T`
/// rather than an `std::any`.
template <class T, class Capture, class Restore>
DeclaredIO declared_io(Capture capture, Restore restore) {
  return DeclaredIO{
      [capture = std::move(capture)]() -> std::any { return std::any(T(capture())); },
      [restore = std::move(restore)](const std::any& saved) {
        restore(std::any_cast<const T&>(saved));
      }};
}

}  // namespace swp
