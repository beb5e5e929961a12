// `swp pp stages|groups|estimate|search`: the pipeline-parallel model of seed 002.
// (`swp pp simulate` is in commands_pp_simulate.cpp.)

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "pp_options.hpp"
#include "swp/sim/pp_estimate.hpp"
#include "swp/sim/rank_groups.hpp"
#include "swp/sim/search_space.hpp"
#include "swp/sim/send_recv.hpp"
#include "swp/sim/stage_plan.hpp"

namespace swp::cli {

namespace {

// A finite decimal number >= 0, or > 0 when `positive`; at most `max`.
CLI::Validator number_at_least_zero(bool positive,
                                    double max = std::numeric_limits<double>::max()) {
  const std::string expected = max < std::numeric_limits<double>::max()
                                   ? (positive ? "in (0, " : "in [0, ") + number_text(max) + "]"
                                   : (positive ? "> 0" : ">= 0");
  return CLI::Validator(
      [positive, max, expected](std::string& value) -> std::string {
        std::size_t used = 0;
        double x = -1;
        try {
          x = std::stod(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == value.size() && std::isfinite(x) && (positive ? x > 0 : x >= 0) && x <= max)
          return {};
        return "expected a number " + expected + ", got '" + value + "'";
      },
      max < std::numeric_limits<double>::max() ? "NUMBER " + expected
                                               : (positive ? "NUMBER>0" : "NUMBER>=0"));
}

}  // namespace

CLI::Validator non_negative_number() { return number_at_least_zero(false); }

CLI::Validator non_negative_number(double max) { return number_at_least_zero(false, max); }

namespace {

struct StageFlags {
  int layers = -1;
  int stages = 0;
  std::vector<int> layer_counts;
};

// The stage plan the flags name: --layers/--stages (uniform) or --layer-counts (explicit).
StagePlan stage_plan(const StageFlags& f) {
  if (!f.layer_counts.empty()) {
    try {
      return StagePlan::from_layer_counts(f.layer_counts);
    } catch (const std::invalid_argument& e) {
      print_error(std::string("swp pp: --layer-counts: ") + e.what());
      throw CommandFailed{Exit::bad_usage};
    }
  }
  if (f.layers < 0) {
    print_error("swp pp: give --layers and --stages, or --layer-counts");
    throw CommandFailed{Exit::bad_usage};
  }
  return StagePlan::uniform(f.layers, f.stages);
}

// --layers and --stages, or --layer-counts instead of both.
void add_stage_flags(CLI::App& cmd, StageFlags& f) {
  auto* layers = cmd.add_option("--layers", f.layers, "decoder layers of the model")
                     ->check(in_range(0, 1'000'000));
  auto* stages =
      cmd.add_option("--stages", f.stages, "pipeline stages (uniform partition: ceil(L/S) each)")
          ->check(in_range(1, 100'000));
  auto* counts = cmd.add_option("--layer-counts", f.layer_counts,
                                "an explicit partition instead: layers per stage, comma separated")
                     ->delimiter(',')
                     ->check(in_range(0, 1'000'000))
                     ->excludes(layers)
                     ->excludes(stages);
  // One way or the other, in full.
  layers->needs(stages);
  stages->needs(layers);
  (void)counts;
}

int print_stages(const StageFlags& f) {
  const auto plan = stage_plan(f);
  for (const auto& s : plan.stages())
    std::printf("stage %d %d %d\n", s.stage_id, s.start_layer, s.end_layer);
  return Exit::ok;
}

void print_group(const char* name, const ParallelGroup& g) {
  std::printf("%s", name);
  for (int r : g.ranks) std::printf(" %d", r);
  std::printf("\n");
}

struct GroupFlags {
  ParallelConfig config;
  int rank = 0;
};

int print_groups(const GroupFlags& f) {
  RankGroups g;
  try {
    g = make_rank_groups(f.config, f.rank);
  } catch (const std::invalid_argument& e) {
    print_error(std::string("swp pp groups: ") + e.what());
    return Exit::bad_usage;
  }
  print_group("tp_group", g.tp);
  print_group("dp_group", g.dp);
  print_group("pp_group", g.pp);
  std::printf("pp_rank_in_group %d\n", g.pp.rank_in_group);
  return Exit::ok;
}

struct EstimateFlags {
  StageFlags stages;
  double layer_us = 0;
  int microbatches = 1;
  std::int64_t tokens = 0, hidden = 0, dtype_bytes = 2;
  LinkModel link{0, 100};
};

bool all_finite(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

const char* const smaller_compute = "; give a smaller --layer-us";
const char* const smaller_comm =
    "; give a smaller --latency-us, a larger --bandwidth-gbps or a smaller message";

std::string layer_time_overflow(const EstimateFlags& f, const char* what) {
  return "--layer-us " + number_text(f.layer_us) + ": " + what + " is more than a number can hold" +
         smaller_compute;
}

std::string transfer_overflow(const EstimateFlags& f) {
  return "a transfer (--latency-us " + number_text(f.link.latency_us) + " + --tokens " +
         std::to_string(f.tokens) + " x --hidden " + std::to_string(f.hidden) +
         " x --dtype-bytes " + std::to_string(f.dtype_bytes) + " bytes over --bandwidth-gbps " +
         number_text(f.link.bandwidth_gbps) + ") takes more time than a number can hold" +
         smaller_comm;
}

// Finite flags can still multiply past what a double holds (1e300 us a layer times 1e6
// layers): a result that is not finite is refused, naming the flags it came from, instead of
// printing `inf` or `-nan` and exiting 0. Returns the error, empty when every result is finite.
std::string estimate_overflow(const EstimateFlags& f, const PipelineEstimate& e) {
  if (!std::isfinite(e.compute_us())) return layer_time_overflow(f, "the stages' compute time");
  if (!std::isfinite(e.comm_us())) return transfer_overflow(f);
  const double total = e.compute_us() + e.comm_us() + e.bubble_us();
  if (std::isfinite(e.latency_us) && std::isfinite(total)) return {};
  const double slowest = *std::max_element(e.stage_us.begin(), e.stage_us.end());
  if (!std::isfinite(slowest) || f.microbatches == 1)
    return "--layer-us " + number_text(f.layer_us) +
           " and the transfer times add up to more than a number can hold" + smaller_compute;
  return "--microbatches " + std::to_string(f.microbatches) + " times the slowest stage's " +
         number_text(slowest) +
         " us is more than a number can hold; give fewer microbatches or smaller times";
}

// A stage that owns no layers computes nothing, yet the fill-drain model would charge it a
// transfer in and out, as if hidden states went through a device with no work: seed 002 (2.4.2)
// says such partitions are filtered out, not estimated. Returns the error naming the flags that
// made them and the empty stages, or nothing when every stage owns a layer.
std::string empty_stages(const StageFlags& f, const StagePlan& plan) {
  std::vector<int> empty;
  for (const auto& s : plan.stages())
    if (s.layer_count() == 0) empty.push_back(s.stage_id);
  if (empty.empty()) return {};
  std::string flags;
  if (f.layer_counts.empty()) {
    flags = "--layers " + std::to_string(f.layers) + " --stages " + std::to_string(f.stages);
  } else {
    flags = "--layer-counts ";
    for (std::size_t i = 0; i < f.layer_counts.size(); ++i)
      flags += (i > 0 ? "," : "") + std::to_string(f.layer_counts[i]);
  }
  std::string which;
  if (empty.size() == 1) {
    which = "stage " + std::to_string(empty[0]) + " owns";
  } else if (empty.back() - empty.front() + 1 == static_cast<int>(empty.size())) {
    which =
        "stages " + std::to_string(empty.front()) + ".." + std::to_string(empty.back()) + " own";
  } else {
    which = "stages";
    for (std::size_t i = 0; i < empty.size(); ++i)
      which += (i > 0 ? ", " : " ") + std::to_string(empty[i]);
    which += " own";
  }
  std::string message = flags + ": " + which + " no layers";
  if (!f.layer_counts.empty())
    return message + "; an empty stage is no pipeline stage: leave it out";
  // The uniform partition: the most stages up to --stages that all own a layer.
  const int per_stage = f.stages > 0 ? (f.layers + f.stages - 1) / f.stages : 0;
  message += " (uniform partition: ceil(" + std::to_string(f.layers) + "/" +
             std::to_string(f.stages) + ") = " + std::to_string(per_stage) +
             (per_stage == 1 ? " layer" : " layers") + " a stage)";
  int fits = 0;
  for (int s = std::min(f.stages, f.layers); s >= 1 && fits == 0; --s)
    if (static_cast<std::int64_t>(s - 1) * ((f.layers + s - 1) / s) < f.layers) fits = s;
  if (fits == 0) return message + "; a pipeline needs at least one layer";
  return message + "; an empty stage is no pipeline stage: give at most " + std::to_string(fits) +
         " stages, or --layer-counts";
}

int print_estimate(const EstimateFlags& f) {
  const auto plan = stage_plan(f.stages);
  if (const auto error = empty_stages(f.stages, plan); !error.empty()) {
    print_error("swp pp estimate: " + error);
    return Exit::bad_usage;
  }
  std::vector<double> compute;
  for (const auto& s : plan.stages()) compute.push_back(s.layer_count() * f.layer_us);
  std::int64_t bytes = 0;
  try {
    bytes = hidden_states_message_bytes(f.tokens, f.hidden, f.dtype_bytes);
  } catch (const std::exception& e) {
    print_error(std::string("swp pp estimate: ") + e.what());
    return Exit::bad_usage;
  }
  std::string overflow;
  PipelineEstimate e;
  if (!all_finite(compute)) {
    overflow = layer_time_overflow(f, "its product with a stage's layers");
  } else if (!std::isfinite(f.link.one_way_us(bytes))) {
    overflow = transfer_overflow(f);
  } else {
    e = estimate_pipeline(compute, stage_comm_us(plan.num_stages(), bytes, f.link), f.microbatches);
    overflow = estimate_overflow(f, e);
  }
  if (!overflow.empty()) {
    print_error("swp pp estimate: " + overflow);
    return Exit::bad_usage;
  }
  pp_metric("latency_us", e.latency_us, "us");
  pp_metric("pp_compute_us", e.compute_us(), "us");
  pp_metric("pp_comm_us", e.comm_us(), "us");
  pp_metric("pp_bubble_us", e.bubble_us(), "us");
  std::printf("%s\n", format_pp_breakdown(e).c_str());
  return Exit::ok;
}

struct SearchFlags {
  int num_devices = 1;
  // Text, not int: given with no values, CLI11 stores one empty string (an empty list here).
  std::vector<std::string> tp_sizes, pp_sizes;
  CLI::Option* tp = nullptr;
  CLI::Option* pp = nullptr;
};

int print_search(const SearchFlags& f) {
  // Absent: TP searches powers of two (the seed's default search), PP stays 1; given with no
  // values: powers of two.
  const auto sizes = [](const CLI::Option* o, const std::vector<std::string>& text,
                        bool absent_is_empty) -> std::optional<std::vector<int>> {
    if (o->count() == 0 && !absent_is_empty) return std::nullopt;
    std::vector<int> out;
    for (const auto& t : text) {
      if (t.empty()) continue;
      std::size_t used = 0;
      long v = 0;
      try {
        v = std::stol(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != t.size() || v < 1 || v > 1'000'000)
        throw std::invalid_argument(o->get_name() + ": expected a positive integer, got '" + t +
                                    "'");
      out.push_back(static_cast<int>(v));
    }
    return out;
  };
  try {
    const auto tp =
        resolve_search_sizes(sizes(f.tp, f.tp_sizes, true), f.num_devices, 1, "--tp-sizes");
    const auto pp =
        resolve_search_sizes(sizes(f.pp, f.pp_sizes, false), f.num_devices, 1, "--pp-sizes");
    for (const auto& c : search_candidates(f.num_devices, tp, pp))
      std::printf("tp=%d pp=%d dp=%d\n", c.tp, c.pp, c.dp);
  } catch (const std::invalid_argument& e) {
    print_error(std::string("swp pp search: ") + e.what());
    return Exit::bad_usage;
  }
  return Exit::ok;
}

}  // namespace

void pp_metric(const char* name, double value, const char* unit) {
  std::printf("metric %s %.10g %s\n", name, value, unit);
}

void add_pp_command(CLI::App& app, Action& action) {
  auto* pp = app.add_subcommand(
      "pp",
      "pipeline-parallel model (seed 002): stage partition, rank groups, fill-drain "
      "estimate, TP x PP x DP search, event-level schedule simulation");
  pp->require_subcommand(1);

  auto* stages = pp->add_subcommand("stages", "the uniform stage partition: stage ID START END");
  auto stage_flags = std::make_shared<StageFlags>();
  add_stage_flags(*stages, *stage_flags);
  stages->callback(
      [&action, stage_flags] { action = [stage_flags] { return print_stages(*stage_flags); }; });

  auto* groups =
      pp->add_subcommand("groups", "the TP, DP and PP groups of a rank ([DP, PP, TP] layout)");
  auto group_flags = std::make_shared<GroupFlags>();
  groups->add_option("--world", group_flags->config.world_size, "world size")
      ->required()
      ->check(in_range(1, 10'000'000));
  groups->add_option("--tp", group_flags->config.tp_size, "tensor-parallel size")
      ->check(in_range(1, 10'000'000))
      ->capture_default_str();
  groups->add_option("--pp", group_flags->config.pp_size, "pipeline-parallel size")
      ->check(in_range(1, 10'000'000))
      ->capture_default_str();
  groups->add_option("--dp", group_flags->config.dp_size, "data-parallel size")
      ->check(in_range(1, 10'000'000))
      ->capture_default_str();
  groups->add_option("--rank", group_flags->rank, "the global rank")
      ->required()
      ->check(in_range(0, 10'000'000));
  groups->callback(
      [&action, group_flags] { action = [group_flags] { return print_groups(*group_flags); }; });

  auto* estimate = pp->add_subcommand(
      "estimate", "fill-drain latency: sum of stage times + (m - 1) x the slowest");
  auto est = std::make_shared<EstimateFlags>();
  add_stage_flags(*estimate, est->stages);
  estimate->add_option("--layer-us", est->layer_us, "compute time of one layer (us)")
      ->required()
      ->check(non_negative_number());
  estimate->add_option("--microbatches", est->microbatches, "microbatches")
      ->check(in_range(1, 100'000'000))
      ->capture_default_str();
  estimate->add_option("--tokens", est->tokens, "tokens per microbatch (message size)")
      ->check(in_range(0, INT64_MAX))
      ->capture_default_str();
  estimate->add_option("--hidden", est->hidden, "hidden size")
      ->check(in_range(0, INT64_MAX))
      ->capture_default_str();
  estimate->add_option("--dtype-bytes", est->dtype_bytes, "bytes per element")
      ->check(in_range(0, 64))
      ->capture_default_str();
  estimate
      ->add_option("--bandwidth-gbps", est->link.bandwidth_gbps,
                   "stage-to-stage bandwidth, 1e9 bytes per second")
      ->check(number_at_least_zero(true))
      ->capture_default_str();
  estimate->add_option("--latency-us", est->link.latency_us, "stage-to-stage latency (us)")
      ->check(non_negative_number())
      ->capture_default_str();
  estimate->callback([&action, est] { action = [est] { return print_estimate(*est); }; });

  auto* search = pp->add_subcommand("search", "every tp x pp x dp = N deployment");
  auto sf = std::make_shared<SearchFlags>();
  search->add_option("--num-devices", sf->num_devices, "devices (N)")
      ->required()
      ->check(in_range(1, 1'000'000));
  sf->tp = search
               ->add_option("--tp-sizes", sf->tp_sizes,
                            "TP sizes to try; no values: powers of two <= N (the default)")
               ->expected(0, 1 << 20)
               ->delimiter(',');
  sf->pp = search
               ->add_option("--pp-sizes", sf->pp_sizes,
                            "PP sizes to try; no values: powers of two <= N; absent: 1")
               ->expected(0, 1 << 20)
               ->delimiter(',');
  search->callback([&action, sf] { action = [sf] { return print_search(*sf); }; });

  add_pp_simulate_command(*pp, action);
}

}  // namespace swp::cli
