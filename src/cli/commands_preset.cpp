// swp preset: the TorchRec pipelines of seed 000 as plan JSON.

#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

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
  std::int64_t start_batch = 900;
  std::int64_t compile_on_iter = 3;
};

// --stages "data_copy:memcpy,gpu_postproc": NAME[:STREAM], comma-separated, each name once.
// Throws std::invalid_argument naming the flag and the name given twice.
std::vector<presets::StageSpec> parse_stages(const std::string& list) {
  std::vector<presets::StageSpec> stages;
  std::set<std::string> names;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    const auto colon = item.find(':');
    std::string name = item.substr(0, colon);
    if (!names.insert(name).second)
      throw std::invalid_argument("--stages: stage '" + name +
                                  "' is given twice (each stage is a task, named once)");
    stages.push_back({std::move(name), colon == std::string::npos ? "" : item.substr(colon + 1)});
  }
  return stages;
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
  presets::Preset preset;
  try {
    preset = presets::make_preset(
        flags.name, {.emb_lookup_stream = presets::parse_emb_lookup_stream(flags.emb_lookup_stream),
                     .start_batch = flags.start_batch,
                     .compile_on_iter = flags.compile_on_iter,
                     .loader_lane = flags.loader_lane,
                     .stages = parse_stages(flags.stages)});
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
  cmd->callback([&action, flags] {
    action = [flags] { return flags->list ? list_presets() : print_preset(*flags); };
  });
}

}  // namespace swp::cli
