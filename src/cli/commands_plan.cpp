#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "swp/core/enqueue_order.hpp"
#include "swp/core/schedule_table.hpp"
#include "swp/core/stage_analysis.hpp"

namespace swp::cli {

namespace {

// Shared by order and analyze: --policy ready-first|stage-descending.
void add_policy_option(CLI::App& command, std::string& policy, const char* fallback) {
  policy = fallback;
  command.add_option("--policy", policy, "enqueue order policy")
      ->check(CLI::IsMember({"ready-first", "stage-descending"}))
      ->capture_default_str();
}

OrderPolicy to_policy(const std::string& name) {
  OrderPolicy policy{};
  parse_policy(name, policy);  // CLI11 already restricted the value to a known name
  return policy;
}

std::set<std::string> split_names(const std::vector<std::string>& lists) {
  std::set<std::string> names;
  for (const auto& list : lists) {
    std::stringstream in(list);
    for (std::string name; std::getline(in, name, ',');)
      if (!name.empty()) names.insert(name);
  }
  return names;
}

}  // namespace

void add_plan_commands(CLI::App& app, Action& action) {
  {
    auto* cmd = app.add_subcommand("validate", "check every plan rule; exit 1 naming the tasks");
    auto path = std::make_shared<std::string>();
    add_plan_argument(*cmd, *path);
    cmd->callback([&action, path] {
      action = [path] {
        auto plan = load_checked(*path, Strictness::valid);
        if (!plan) return Exit::invalid_plan;
        std::cout << "ok: " << plan->inspection.graph.size() << " tasks, depth " << plan->inspection.graph.depth()
                  << '\n';
        return Exit::ok;
      };
    });
  }
  {
    auto* cmd = app.add_subcommand("order", "print the per-period enqueue order, one task a line");
    auto path = std::make_shared<std::string>();
    auto policy = std::make_shared<std::string>();
    add_plan_argument(*cmd, *path);
    add_policy_option(*cmd, *policy, "ready-first");
    cmd->callback([&action, path, policy] {
      action = [path, policy] {
        auto plan = load_checked(*path, Strictness::inspectable);
        if (!plan) return Exit::invalid_plan;
        for (TaskIndex t : enqueue_order(plan->inspection.graph, to_policy(*policy)))
          std::cout << plan->inspection.graph.name(t) << '\n';
        return Exit::ok;
      };
    });
  }
  {
    auto* cmd = app.add_subcommand("schedule", "print the period x task schedule table");
    auto path = std::make_shared<std::string>();
    auto periods = std::make_shared<int>(0);
    auto skip = std::make_shared<std::vector<std::string>>();
    add_plan_argument(*cmd, *path);
    cmd->add_option("--periods", *periods, "number of periods (columns) to print")
        ->required()
        ->check(in_range(1, 100000));
    cmd->add_option("--shortcut", *skip, "tasks shown as shortcut ([skip]); comma-separated");
    cmd->callback([&action, path, periods, skip] {
      action = [path, periods, skip] {
        auto plan = load_checked(*path, Strictness::inspectable);
        if (!plan) return Exit::invalid_plan;
        const auto names = split_names(*skip);
        for (const auto& name : names) {
          if (!plan->inspection.graph.find(name)) {
            print_error("--shortcut: no task is called '" + name + "' in " + *path);
            return Exit::bad_usage;
          }
        }
        std::cout << format_schedule(plan->inspection.graph, *periods, names);
        return Exit::ok;
      };
    });
  }
  {
    auto* cmd = app.add_subcommand(
        "analyze", "stage analysis: topological positions, LDS of stages, depth, Dilworth check");
    auto path = std::make_shared<std::string>();
    auto policy = std::make_shared<std::string>();
    add_plan_argument(*cmd, *path);
    add_policy_option(*cmd, *policy, "stage-descending");
    cmd->callback([&action, path, policy] {
      action = [path, policy] {
        auto plan = load_checked(*path, Strictness::inspectable);
        if (!plan) return Exit::invalid_plan;
        const auto analysis = analyze_stages(plan->inspection.graph, to_policy(*policy));
        std::cout << format_stage_analysis(plan->inspection.graph, analysis);
        return Exit::ok;
      };
    });
  }
}

}  // namespace swp::cli
