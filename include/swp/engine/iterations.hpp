#pragma once
// Iterations: the range form of a pipeline run, `for (auto iter : pipe.iterations(loader))`.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace swp {

namespace detail {

/// The iteration number of what a progress() returned: an index as it is, a Retired by its
/// iter() (a Retired does not convert to its number silently).
inline std::optional<std::int64_t> iteration_of(std::optional<std::int64_t> index) noexcept {
  return index;
}
template <class Result>
  requires requires(const Result& r) {
    { r.iter() } -> std::convertible_to<std::int64_t>;
  }
std::optional<std::int64_t> iteration_of(const std::optional<Result>& retired) noexcept {
  if (!retired) return std::nullopt;
  return retired->iter();
}

}  // namespace detail

/// An input range over the iterations a pipeline retires: each increment is one
/// `pipe.progress()`, and the range ends when progress() returns empty (end of data).
/// Made by `Pipeline::iterations(source)`, which fills the pipeline first; works over anything
/// with a `progress()` returning `std::optional<std::int64_t>` (a PresetRunner's index) or an
/// optional of something with an `iter()` (a Pipeline's Retired: the range yields its iter()).
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
    { detail::iteration_of(pipe.progress()) } -> std::same_as<std::optional<std::int64_t>>;
  }
class Iterations {
 public:
  struct Sentinel {};

  class Iterator {
   public:
    using value_type = std::int64_t;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    explicit Iterator(Pipe* pipe) : pipe_(pipe), current_(detail::iteration_of(pipe->progress())) {}

    std::int64_t operator*() const { return *current_; }
    Iterator& operator++() {
      current_ = detail::iteration_of(pipe_->progress());
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
