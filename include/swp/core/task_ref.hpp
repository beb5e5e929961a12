#pragma once
// TaskHandle and TaskRef: the two ways a plan refers to one of its tasks.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace swp {

/// Handle returned when a task is added to a PipelinePlan: its position in the plan plus its
/// name. A handle from another plan is caught by validation (unknown task reference).
struct TaskHandle {
  std::size_t index = 0;
  std::string name;

  friend bool operator==(const TaskHandle&, const TaskHandle&) = default;
};

/// A reference to a task, either by handle (checked against the plan it came from) or by name,
/// as the seed allows in `intra_iter_deps` / `inter_iter_deps`.
class TaskRef {
 public:
  TaskRef(TaskHandle handle) : ref_(std::move(handle)) {}  // NOLINT: implicit by design
  TaskRef(std::string name) : ref_(std::move(name)) {}     // NOLINT
  TaskRef(std::string_view name) : ref_(std::string(name)) {}  // NOLINT
  TaskRef(const char* name) : ref_(std::string(name)) {}   // NOLINT

  /// The referenced task's name (a handle carries it too).
  [[nodiscard]] const std::string& name() const {
    if (const auto* h = std::get_if<TaskHandle>(&ref_)) return h->name;
    return std::get<std::string>(ref_);
  }

  /// The handle, when the reference was made from one.
  [[nodiscard]] const TaskHandle* handle() const { return std::get_if<TaskHandle>(&ref_); }

  friend bool operator==(const TaskRef&, const TaskRef&) = default;

 private:
  std::variant<TaskHandle, std::string> ref_;
};

}  // namespace swp
