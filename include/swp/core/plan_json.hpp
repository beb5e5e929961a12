#pragma once
// Plan files: the JSON schema of DESIGN.md, read with errors that name file, field and line.

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "swp/core/pipeline_plan.hpp"

namespace swp {

/// A plan file that cannot be read: malformed JSON, a field of the wrong type, a missing field.
/// `what()` reads `SOURCE:LINE:COLUMN: FIELD: MESSAGE` (line and column only for syntax errors).
class PlanFormatError : public std::runtime_error {
 public:
  PlanFormatError(std::string source, std::string field, const std::string& message,
                  int line = 0, int column = 0);

  [[nodiscard]] const std::string& source() const { return source_; }
  /// JSON path of the offending value, e.g. `tasks[2].stage`; empty for syntax errors.
  [[nodiscard]] const std::string& field() const { return field_; }
  [[nodiscard]] int line() const { return line_; }
  [[nodiscard]] int column() const { return column_; }

 private:
  std::string source_, field_;
  int line_, column_;
};

/// A plan file that cannot be opened or read at all (missing, unreadable, a directory): an
/// input the caller named wrongly rather than a plan that is wrong. `swp` exits 2 for it.
class PlanReadError : public PlanFormatError {
 public:
  using PlanFormatError::PlanFormatError;
};

/// The largest plan `load_plan` reads (256 MiB; a 100k-task plan takes about 15 MiB): more is
/// not a plan, and `swp validate - < /dev/zero` must end.
inline constexpr std::size_t max_plan_bytes = std::size_t{256} << 20;

/// A parsed plan and the warnings met on the way (unknown keys, which are ignored).
struct ParsedPlan {
  PipelinePlan plan;
  std::vector<std::string> warnings;
};

/// Parses plan JSON. `source` names the input in messages (a file name, "<stdin>").
/// Throws PlanFormatError. The result is not validated: call `validate()` on `.plan`.
///
/// Schema (DESIGN.md): `{"tasks": [{"name", "stage", "stream", "thread_group",
/// "globally_ordered", "cpu_us", "device_us", "jitter_every", "jitter_device_us"}],
/// "intra_iter_deps": [[task, dep]], "inter_iter_deps": [[task, dep]], "pipeline_depth",
/// "stream_aliases": {alias: target}}`; only `tasks` and each task's `name` are required.
ParsedPlan parse_plan(std::string_view json, const std::string& source = "<string>");

/// Reads and parses a plan file (a regular file, a FIFO, a process substitution); `-` reads
/// standard input. Throws PlanReadError when the file cannot be opened or read,
/// PlanFormatError when it is no plan, including one larger than max_plan_bytes.
ParsedPlan load_plan(const std::string& path);

/// Serializes a plan to the same schema, one task per line. Defaults (stream/thread_group
/// "default", globally_ordered false, zero costs) are written too, except zero costs;
/// `pipeline_depth` is written when set, `stream_aliases` when there are any. For a plan that
/// `validate()` accepts (it refuses names that are not UTF-8, empty stream and lane names and
/// a negative jitter_every, which the reader would) `parse_plan(plan_to_json(p))` gives `p` back,
/// with dependencies as names (a TaskRef made from a handle compares unequal to one made from the
/// same name) and without task bodies and DeclaredIO, which JSON cannot hold. The output is
/// JSON (UTF-8) for any plan: in a name that is not UTF-8, each maximal subpart of an
/// ill-formed sequence (Unicode §3.9: a well-formed sequence cut short, else one byte that
/// starts none) is written as one U+FFFD, as browsers decode it.
std::string plan_to_json(const PipelinePlan& plan);

}  // namespace swp
