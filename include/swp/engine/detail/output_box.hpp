#pragma once
// OutputBox / TypedBox<T>: where one task instance's output value lives (one per context slot
// and task that returns a value), and the typed access `ctx.get` and the bodies use.

#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace swp::detail {

/// The storage of one task's output value in one context slot, of a type fixed when the
/// pipeline is made (the task's value type). Reads check the type by a key compared in one
/// instruction, not by RTTI; what a shortcut needs (copying) goes through the virtuals.
class OutputBox {
 public:
  virtual ~OutputBox() = default;
  OutputBox(const OutputBox&) = delete;
  OutputBox& operator=(const OutputBox&) = delete;

  virtual void reset() noexcept = 0;
  /// Whether the value can be copied (what a shortcut needs to replay it).
  [[nodiscard]] virtual bool copyable() const noexcept = 0;
  /// A copy of this box; throws std::logic_error when the value type is not copyable.
  [[nodiscard]] virtual std::unique_ptr<OutputBox> clone() const = 0;
  /// Copies `other`'s value (a box of the same type) into this one.
  virtual void assign_from(const OutputBox& other) = 0;

  /// Whether this box holds values of type T.
  template <class T>
  [[nodiscard]] bool holds() const noexcept {
    return key_ == key_of<T>();
  }

 protected:
  explicit OutputBox(const void* key) noexcept : key_(key) {}

  // One address per value type: the identity of T without RTTI (a mutable object, so no
  // constant merging can give two types one address).
  template <class T>
  static const void* key_of() noexcept {
    static char key;
    return &key;
  }

 private:
  const void* key_;
};

template <class T>
class TypedBox final : public OutputBox {
 public:
  TypedBox() noexcept : OutputBox(key_of<T>()) {}

  std::optional<T> value;

  /// `box` as a box of T, or nullptr when it is none (or holds another type).
  static TypedBox* of(OutputBox* box) noexcept {
    return box != nullptr && box->holds<T>() ? static_cast<TypedBox*>(box) : nullptr;
  }

  void reset() noexcept override { value.reset(); }
  [[nodiscard]] bool copyable() const noexcept override { return std::is_copy_constructible_v<T>; }
  [[nodiscard]] std::unique_ptr<OutputBox> clone() const override {
    if constexpr (std::is_copy_constructible_v<T>) {
      auto copy = std::make_unique<TypedBox>();
      copy->value = value;
      return copy;
    } else {
      throw std::logic_error("a task output of a non-copyable type cannot be cached");
    }
  }
  void assign_from(const OutputBox& other) override {
    if constexpr (std::is_copy_constructible_v<T>) {
      const auto& typed = static_cast<const TypedBox&>(other);
      value.reset();
      if (typed.value) value.emplace(*typed.value);
    } else {
      throw std::logic_error("a task output of a non-copyable type cannot be replayed");
    }
  }
};

}  // namespace swp::detail
