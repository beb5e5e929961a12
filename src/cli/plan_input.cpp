#include "plan_input.hpp"

#include <filesystem>

#include "diagnostics.hpp"
#include "swp/core/plan_json.hpp"

namespace swp::cli {

void add_plan_argument(CLI::App& command, std::string& path) {
  command.add_option("PLAN", path, "plan JSON file, or - for standard input")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& p) -> std::string {
            if (p == "-") return {};
            // Anything readable that is not a directory: a FIFO or a process substitution
            // (`swp validate <(cat plan.json)`) is a plan file too.
            std::error_code ec;
            if (std::filesystem::is_directory(p, ec)) return "is a directory, not a plan file: " + p;
            if (!std::filesystem::exists(p, ec)) return "plan file not found: " + p;
            return {};
          },
          "FILE|-"));
}

std::optional<CheckedPlan> load_checked(const std::string& path, Strictness strictness) {
  try {
    auto parsed = load_plan(path);
    for (const auto& w : parsed.warnings) print_warning(w);
    auto inspection = inspect(parsed.plan);
    const bool fatal = strictness == Strictness::valid ? !inspection.valid()
                                                       : inspection.structurally_broken();
    // Rule messages name tasks; the file is named after them, so that the messages still
    // begin with the rule ("error: corollary 1: ..."). The errors make one line, joined with
    // "; " (DESIGN.md: a non-zero exit prints exactly one `error:` line); warnings one each.
    const std::string where = " (in " + std::string(path == "-" ? "<stdin>" : path) + ")";
    std::string errors;
    for (const auto& v : inspection.violations) {
      if (strictness == Strictness::valid || is_structural(v.rule)) {
        errors += (errors.empty() ? "" : "; ") + v.message + where;
      } else {
        print_warning(v.message + where);
      }
    }
    if (!errors.empty()) print_error(errors);
    if (fatal) return std::nullopt;
    if (!inspection.valid())
      print_warning(path + ": the plan breaks the rules above; `swp validate` rejects it and an "
                           "engine would refuse to run it");
    return CheckedPlan{std::move(parsed.plan), std::move(inspection)};
  } catch (const PlanReadError& e) {
    // Opened after the argument check: it went away, or it cannot be read (permissions).
    print_error(e.what());
    throw CommandFailed{Exit::bad_usage};
  } catch (const PlanFormatError& e) {
    print_error(e.what());
    return std::nullopt;
  }
}

}  // namespace swp::cli
