#pragma once
// Iterations: the range form of a pipeline run, `for (auto iter : pipe.iterations(loader))`.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace swp {

/// An input range over the iterations a pipeline retires: each increment is one
/// `pipe.progress()`, and the range ends when progress() returns empty (end of data).
/// Made by `Pipeline::iterations(source)`, which fills the pipeline first; works over anything
/// with a `progress()` returning what converts to `std::optional<std::int64_t>` (a
/// Pipeline's Retired, a PresetRunner's index).
///
/// Completion: `begin()` and `++it` block like progress() (the calling thread helps run tasks).
/// Errors: what progress() throws (TaskError, PipelineTimeout) propagates from `begin()` or
/// `++it`; the pipeline is drained then and can be filled again.
/// Cancellation: none of its own; stop iterating and call `drain()` to end a run early.
/// Example:
/// ```
/// for (std::int64_t iter : pipe.iterations(loader)) log(iter);
/// for (std::int64_t iter : swp::Iterations(runner)) log(iter);   // already filled
/// ```
template <class Pipe>
  requires requires(Pipe& pipe) {
    { pipe.progress() } -> std::convertible_to<std::optional<std::int64_t>>;
  }
class Iterations {
 public:
  struct Sentinel {};

  class Iterator {
   public:
    using value_type = std::int64_t;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    explicit Iterator(Pipe* pipe) : pipe_(pipe), current_(pipe->progress()) {}

    std::int64_t operator*() const { return *current_; }
    Iterator& operator++() {
      current_ = pipe_->progress();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& it, Sentinel) { return !it.current_; }

   private:
    Pipe* pipe_ = nullptr;
    std::optional<std::int64_t> current_;
  };

  /// The iterations `pipe` retires from now on; `pipe` must be filled and outlive the range.
  explicit Iterations(Pipe& pipe) : pipe_(&pipe) {}

  /// Retires the first iteration (one progress()). Call once per range.
  Iterator begin() { return Iterator(pipe_); }
  Sentinel end() const { return {}; }

 private:
  Pipe* pipe_;
};

}  // namespace swp
