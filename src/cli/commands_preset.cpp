// swp preset: the TorchRec pipelines of seed 000 as plan JSON.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "swp/core/plan_error.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/presets/preset_registry.hpp"
#include "swp/presets/recsys_costs.hpp"

namespace swp::cli {

namespace {

struct PresetFlags {
  std::string name;
  bool list = false;
  bool recsys_costs = false;
  std::string phase;
  std::string emb_lookup_stream = "data_dist";
  std::string loader_lane = "loader";
  std::string stages;
  bool stages_given = false;  // --stages given, even as ''
  std::int64_t start_batch = 900;
  std::int64_t compile_on_iter = 3;
  // The preset-specific options given on the command line (by flag name), checked against
  // the preset they apply to.
  std::vector<std::string> given;
};

// The options that apply to some presets only, and those presets: any other preset refuses
// them (an option silently ignored would print a plan other than the one asked for).
struct PresetSpecificOption {
  const char* flag;
  std::vector<std::string_view> presets;
};
const std::vector<PresetSpecificOption>& preset_specific_options() {
  static const std::vector<PresetSpecificOption> options = {
      {"--emb-lookup-stream", {"fused_sparse_dist", "eval_fused_sparse_dist"}},
      {"--start-batch", {"semi_sync"}},
      {"--compile-on-iter", {"pt2"}},
      {"--loader-lane", {"eval_sparse_dist"}},
      {"--stages", {"staged"}},
  };
  return options;
}

// --stages "data_copy:memcpy,gpu_postproc": NAME[:STREAM], comma-separated, each name once.
// Throws std::invalid_argument naming the flag and what is wrong: no stages, a stage without
// a name (an empty item too), an empty stream after ':', a name given twice.
std::vector<presets::StageSpec> parse_stages(const std::string& list) {
  if (list.empty())
    throw std::invalid_argument(
        "--stages: no stages given (NAME[:STREAM],...; leave the option "
        "out for the default data_copy,gpu_postproc)");
  std::vector<presets::StageSpec> stages;
  std::set<std::string> names;
  for (std::size_t begin = 0, k = 0; begin <= list.size(); ++k) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    begin = end + 1;
    const auto colon = item.find(':');
    std::string name = item.substr(0, colon);
    if (name.empty())
      throw std::invalid_argument("--stages: stage " + std::to_string(k) + " has no name (in '" +
                                  list + "')");
    if (colon != std::string::npos && colon + 1 == item.size())
      throw std::invalid_argument("--stages: stage '" + name +
                                  "' has an empty stream after ':' (leave out ':' for a stream "
                                  "named after the stage)");
    if (!names.insert(name).second)
      throw std::invalid_argument("--stages: stage '" + name +
                                  "' is given twice (each stage is a task, named once)");
    stages.push_back({std::move(name), colon == std::string::npos ? "" : item.substr(colon + 1)});
  }
  return stages;
}

// Names the first option of `flags.given` that does not apply to the preset, or nothing.
std::optional<std::string> inapplicable_option(const PresetFlags& flags) {
  for (const auto& option : preset_specific_options()) {
    if (std::find(flags.given.begin(), flags.given.end(), option.flag) == flags.given.end() ||
        std::find(option.presets.begin(), option.presets.end(), flags.name) != option.presets.end())
      continue;
    std::string presets;
    for (auto p : option.presets) presets += (presets.empty() ? "" : ", ") + std::string(p);
    return std::string(option.flag) + " does not apply to preset '" + flags.name + "' (only to " +
           presets + ")";
  }
  return std::nullopt;
}

int list_presets() {
  for (const auto& p : presets::preset_catalogue())
    std::printf("%-26.*s %.*s\n", static_cast<int>(p.name.size()), p.name.data(),
                static_cast<int>(p.description.size()), p.description.data());
  return Exit::ok;
}

int print_preset(const PresetFlags& flags) {
  if (flags.name.empty()) {
    print_error("swp preset: name a preset (swp preset --list names them)");
    return Exit::bad_usage;
  }
  const auto catalogue = presets::preset_catalogue();
  const bool known = std::any_of(catalogue.begin(), catalogue.end(),
                                 [&](const auto& p) { return p.name == flags.name; });
  if (known) {  // an unknown name is make_preset's to report, with the known ones
    if (const auto refused = inapplicable_option(flags)) {
      print_error(*refused);
      return Exit::bad_usage;
    }
  }
  presets::Preset preset;
  try {
    preset = presets::make_preset(
        flags.name, {.emb_lookup_stream = presets::parse_emb_lookup_stream(flags.emb_lookup_stream),
                     .start_batch = flags.start_batch,
                     .compile_on_iter = flags.compile_on_iter,
                     .loader_lane = flags.loader_lane,
                     .stages = flags.stages_given ? parse_stages(flags.stages)
                                                  : std::vector<presets::StageSpec>{}});
  } catch (const std::invalid_argument& e) {  // unknown name or bad option value
    print_error(e.what());
    return Exit::bad_usage;
  } catch (const PlanError& e) {  // option values that make no valid plan (names, streams)
    print_error("swp preset: " + std::string(e.what()));
    return Exit::bad_usage;
  }
  const presets::PresetPhase* phase = &preset.phases.back();
  if (!flags.phase.empty()) {
    phase = preset.phase(flags.phase);
    if (phase == nullptr) {
      std::string labels;
      for (const auto& p : preset.phases) labels += (labels.empty() ? "" : ", ") + p.label;
      print_error("--phase: preset '" + preset.name + "' has no phase '" + flags.phase +
                  "'; its phases are " + labels);
      return Exit::bad_usage;
    }
  }
  PipelinePlan plan = phase->plan;
  if (flags.recsys_costs) presets::apply_recsys_costs(plan);
  std::cout << plan_to_json(plan);
  return Exit::ok;
}

}  // namespace

void add_preset_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("preset", "print a TorchRec pipeline preset as plan JSON");
  auto flags = std::make_shared<PresetFlags>();
  cmd->add_option("NAME", flags->name, "preset name (see --list)");
  cmd->add_flag("--list", flags->list, "name every preset with a one-line description");
  cmd->add_option("--phase", flags->phase,
                  "print this phase's plan (semi_sync: sync, semi_sync; pt2: eager, compiled); "
                  "default: the steady state");
  cmd->add_flag("--recsys-costs", flags->recsys_costs,
                "add synthetic costs shaped like a recsys training step (for swp run)");
  cmd->add_option("--emb-lookup-stream", flags->emb_lookup_stream,
                  "fused_sparse_dist, eval_fused_sparse_dist: the embedding lookup's stream")
      ->check(CLI::IsMember({"data_dist", "new", "current"}))
      ->capture_default_str();
  cmd->add_option("--start-batch", flags->start_batch,
                  "semi_sync: batches of the synchronous warm-up phase")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--compile-on-iter", flags->compile_on_iter,
                  "pt2: the iteration (1-based) at which the compile step runs")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--loader-lane", flags->loader_lane,
                  "eval_sparse_dist: the background H2D lane")
      ->capture_default_str();
  cmd->add_option("--stages", flags->stages,
                  "staged: NAME[:STREAM],... (default: data_copy,gpu_postproc)");
  cmd->callback([&action, flags, cmd] {
    flags->given.clear();
    for (const auto& option : preset_specific_options())
      if (cmd->count(option.flag) > 0) flags->given.emplace_back(option.flag);
    flags->stages_given = cmd->count("--stages") > 0;
    action = [flags] { return flags->list ? list_presets() : print_preset(*flags); };
  });
}

}  // namespace swp::cli
