#pragma once
// Shortcut: a task's declared context writes, and the cache that replays a skipped task
// (seed 003: enable_shortcut, _capture_and_cache, _apply_shortcut).

#include <concepts>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "swp/core/declared_io.hpp"

namespace swp {

/// The context fields a task declares it writes: what a shortcut snapshots after the task ran
/// (caching) and writes back every time it skips the task (replay). Built by `swp::writes`.
///
/// What replay guarantees: each declared field, the task's output value (`Output<T>`, read
/// with `ctx.get`) and each DeclaredIO's state are set, by copy assignment, to what the caching
/// execution left — a fresh copy per replay, so consumers may move from or modify them. A write
/// the task did not declare is NOT replayed: the field keeps the value a fresh context has.
/// The snapshot is taken when the caching body returned, i.e. when its device work was
/// submitted, not completed: a field that device work fills later holds a handle whose content
/// is not copied. Declare such state through a DeclaredIO whose `capture` copies it in stream
/// order (or synchronizes). A skipped task queues no device work, so its consumers on other
/// streams wait for nothing. swp has no autograd: there is no gradient bridge (the seed's
/// `_GraftGrad`); a backward task that needs a skipped forward's graph must be skipped as well.
///
/// Example:
/// ```
/// struct Fields { Tensor logits; float loss = 0; };
/// using Ctx = swp::IterContext<Batch, Fields>;
/// auto fwd = plan.add("Forward", forward, {.stage = 1});
/// plan.declare_writes(fwd, swp::writes(&Fields::logits, &Fields::loss));
/// ```
template <class Fields>
class Writes {
 public:
  /// Writes one field's snapshot back into a context.
  using Restore = std::function<void(Fields&)>;
  /// Snapshots one field of a context; the result restores it.
  using Snapshot = std::function<Restore(const Fields&)>;

  Writes() = default;
  explicit Writes(std::vector<Snapshot> fields) : fields_(std::move(fields)) {}

  [[nodiscard]] const std::vector<Snapshot>& fields() const noexcept { return fields_; }
  [[nodiscard]] std::size_t size() const noexcept { return fields_.size(); }

  /// The same declarations for a context type deriving from Fields (an IterContext).
  template <class Ctx>
    requires std::derived_from<Ctx, Fields>
  [[nodiscard]] Writes<Ctx> rebind() const {
    std::vector<typename Writes<Ctx>::Snapshot> out;
    for (const Snapshot& snap : fields_) {
      out.push_back([snap](const Ctx& ctx) -> typename Writes<Ctx>::Restore {
        Restore restore = snap(static_cast<const Fields&>(ctx));
        return [restore = std::move(restore)](Ctx& target) { restore(static_cast<Fields&>(target)); };
      });
    }
    return Writes<Ctx>(std::move(out));
  }

  /// Appends `other`'s declarations.
  void append(const Writes& other) {
    fields_.insert(fields_.end(), other.fields_.begin(), other.fields_.end());
  }

 private:
  std::vector<Snapshot> fields_;
};

/// Declares the fields a task writes, as member pointers of the context's fields struct.
/// Every field must be copyable (the shortcut copies it into its cache and back).
/// Example: `swp::writes(&Fields::logits, &Fields::loss)`.
template <class Fields, class... T>
[[nodiscard]] Writes<Fields> writes(T Fields::*... members) {
  static_assert(((std::is_copy_constructible_v<T> && std::is_copy_assignable_v<T>) && ...),
                "swp::writes: a declared field must be copyable: the shortcut snapshots it "
                "and writes a copy back on every replay");
  std::vector<typename Writes<Fields>::Snapshot> fields;
  (fields.push_back([members](const Fields& ctx) -> typename Writes<Fields>::Restore {
     return [saved = std::make_shared<const T>(ctx.*members), members](Fields& target) {
       target.*members = *saved;
     };
   }),
   ...);
  return Writes<Fields>(std::move(fields));
}

}  // namespace swp
