#include "swp/presets/preset_registry.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "support/plans.hpp"
#include "swp/core/plan_error.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/core/schedule_table.hpp"

namespace test_preset_registry {  // each test file's names apart (unity builds)

namespace presets = swp::presets;
using presets::EmbLookupStream;

TEST_SUITE_BEGIN("presets");

namespace {

// The streams a plan's device work runs on (stream aliases resolved).
std::set<std::string> streams_of(const swp::PipelinePlan& plan) {
  const auto graph = swp::validate(plan);
  std::set<std::string> streams;
  for (swp::TaskIndex t = 0; t < graph.size(); ++t) streams.insert(graph.stream(t));
  return streams;
}

const swp::PlannedTask& task_of(const swp::PipelinePlan& plan, const std::string& name) {
  for (const auto& t : plan.tasks)
    if (t.task.name == name) return t;
  throw std::runtime_error("no task " + name);
}

// The stream aliases a preset's default plan adds to the seed's: FusedSparseDist's EmbLookup
// shows the stream name `emb_lookup`, which TorchRec's default choice maps to data_dist.
std::map<std::string, std::string> default_aliases(const std::string& name) {
  if (name == "fused_sparse_dist") return {{"emb_lookup", "data_dist"}};
  return {};
}

// The presets of TrainPipelineSparseDist's family (seed 000's inheritance tree), which make
// the memcpy and data_dist streams at priority -1 as TorchRec does.
const std::set<std::string> sparse_dist_family{
    "sparse_dist",      "sparse_dist_lite",       "fused_sparse_dist",
    "semi_sync",        "prefetch_sparse_dist",   "eval_sparse_dist",
    "eval_fused_sparse_dist", "sparse_dist_comp_autograd"};

// swp's other addition to the seed's plans: TorchRec's stream priorities (the seed's tables
// have no column for them).
void add_torchrec_priorities(const std::string& name, swp::PipelinePlan& plan) {
  if (!sparse_dist_family.contains(name)) return;
  for (auto& t : plan.tasks)
    if (t.schedule.stream == "memcpy" || t.schedule.stream == "data_dist")
      t.schedule.stream_priority = -1;
}

}  // namespace

TEST_CASE("the catalogue names the 11 pipelines of seed 000 in its order") {
  std::vector<std::string> names;
  for (const auto& info : presets::preset_catalogue()) {
    names.emplace_back(info.name);
    CHECK_FALSE(info.description.empty());
    CHECK(info.torchrec_class.find("Pipeline") != std::string_view::npos);
  }
  CHECK(names == std::vector<std::string>{"base", "pt2", "sparse_dist", "sparse_dist_lite",
                                          "fused_sparse_dist", "semi_sync", "prefetch_sparse_dist",
                                          "eval_sparse_dist", "eval_fused_sparse_dist", "staged",
                                          "sparse_dist_comp_autograd"});
}

TEST_CASE("every seed plan is a preset: same plan, same schedule table byte for byte") {
  for (const auto& name : swp::test::seed_plan_names()) {
    CAPTURE(name);
    const auto preset = presets::make_preset(name);
    auto seed = swp::load_plan(swp::test::seed_plan_path(name).string()).plan;
    CHECK(preset.plan().stream_aliases == default_aliases(name));
    seed.stream_aliases = default_aliases(name);
    // swp's one addition to the seed's training plans: ZeroGrad(i) after OptimizerStep(i-1)
    // (what the clock's period order gives the seed; a data-flow engine needs it declared).
    bool trains = false;
    for (const auto& t : seed.tasks) trains = trains || t.task.name == "ZeroGrad";
    if (trains) seed.inter_iter_deps.push_back({"ZeroGrad", "OptimizerStep"});
    add_torchrec_priorities(name, seed);
    CHECK(swp::plan_to_json(preset.plan()) == swp::plan_to_json(seed));
    const auto expected = swp::test::read_text(swp::test::seed_table_path(name));
    const int periods = name == "semi_sync" ? 6 : 5;
    CHECK(swp::format_schedule(swp::validate(preset.plan()), periods) == expected);
  }
}

TEST_CASE("the SparseDist family gives memcpy and data_dist TorchRec's priority -1, others none") {
  for (const auto& info : presets::preset_catalogue()) {
    const std::string name(info.name);
    CAPTURE(name);
    const bool family = sparse_dist_family.contains(name);
    for (const auto& phase : presets::make_preset(name).phases) {
      CAPTURE(phase.label);
      const auto graph = swp::validate(phase.plan);
      for (swp::TaskIndex t = 0; t < graph.size(); ++t) {
        CAPTURE(graph.name(t));
        const bool copies = graph.stream(t) == "memcpy" || graph.stream(t) == "data_dist";
        if (family && copies) {
          CHECK(graph.stream_priority(t) == -1);
        } else {
          CHECK_FALSE(graph.stream_priority(t));  // default, prefetch, a new emb_lookup: 0
        }
      }
    }
  }
  // The fused pipelines' EmbLookup on its own stream ("new") stays at the default priority,
  // and on data_dist (the default choice) shares that stream's -1.
  const auto fresh =
      swp::validate(presets::make_preset("fused_sparse_dist",
                                         {.emb_lookup_stream = EmbLookupStream::new_stream})
                        .plan());
  CHECK_FALSE(fresh.stream_priority(*fresh.find("EmbLookup")));
  const auto shared = swp::validate(presets::make_preset("fused_sparse_dist").plan());
  CHECK(shared.stream_priority(*shared.find("EmbLookup")) == -1);
}

TEST_CASE("streams and depth are the columns of seed 000's comparison matrix") {
  struct Expect {
    const char* name;
    std::size_t streams;
    int depth;
  };
  // The matrix's SemiSync depth (3) contradicts its own plan (pipeline_depth = 4, four
  // batches in flight); the plan wins.
  for (const auto& e : std::vector<Expect>{{"base", 2, 2},
                                           {"pt2", 1, 1},
                                           {"sparse_dist", 3, 3},
                                           {"sparse_dist_lite", 2, 2},
                                           {"fused_sparse_dist", 3, 3},
                                           {"semi_sync", 3, 4},
                                           {"prefetch_sparse_dist", 4, 3},
                                           {"eval_sparse_dist", 3, 2},
                                           {"eval_fused_sparse_dist", 3, 3},
                                           {"staged", 2, 2},
                                           {"sparse_dist_comp_autograd", 3, 3}}) {
    CAPTURE(e.name);
    const auto preset = presets::make_preset(e.name);
    CHECK(preset.name == e.name);
    CHECK(streams_of(preset.plan()).size() == e.streams);
    CHECK(swp::validate(preset.plan()).depth() == e.depth);
  }
}

TEST_CASE("fused pipelines alias the emb_lookup stream as emb_lookup_stream says") {
  using Aliases = std::map<std::string, std::string>;
  struct Expect {
    EmbLookupStream choice;
    Aliases aliases;
    std::string runs_on;
    std::size_t streams;
  };
  for (const char* name : {"fused_sparse_dist", "eval_fused_sparse_dist"}) {
    for (const auto& e : std::vector<Expect>{
             {EmbLookupStream::data_dist, {{"emb_lookup", "data_dist"}}, "data_dist", 3},
             {EmbLookupStream::new_stream, {}, "emb_lookup", 4},
             {EmbLookupStream::current, {{"emb_lookup", "default"}}, "default", 3}}) {
      CAPTURE(name);
      CAPTURE(presets::emb_lookup_stream_name(e.choice));
      const auto plan = presets::make_preset(name, {.emb_lookup_stream = e.choice}).plan();
      // The task keeps the seed's stream name; the alias decides where its work runs.
      CHECK(task_of(plan, "EmbLookup").schedule.stream == "emb_lookup");
      CHECK(plan.stream_aliases == e.aliases);
      const auto graph = swp::validate(plan);
      const auto emb = *graph.find("EmbLookup");
      CHECK(graph.stream_label(emb) == "emb_lookup");
      CHECK(graph.stream(emb) == e.runs_on);
      CHECK(streams_of(plan).size() == e.streams);
    }
  }
  // TorchRec's default reuses the input-dist stream.
  CHECK(presets::make_preset("fused_sparse_dist").plan().stream_aliases ==
        Aliases{{"emb_lookup", "data_dist"}});
}

TEST_CASE("semi_sync warms up on a synchronous plan for start_batch batches") {
  const auto preset = presets::make_preset("semi_sync", {.start_batch = 5});
  REQUIRE(preset.phases.size() == 2);
  const auto& sync = preset.phases[0];
  CHECK(sync.label == "sync");
  CHECK(sync.batches == 5);
  CHECK_FALSE(preset.phases[1].batches.has_value());
  // Same tasks, stages and streams, so the same table; only EmbLookup(i) now waits for
  // OptimizerStep(i-1): batch i sees B-1 parameters.
  CHECK(swp::format_schedule(swp::validate(sync.plan), 6) ==
        swp::format_schedule(swp::validate(preset.plan()), 6));
  const swp::Dependency sync_dep{"EmbLookup", "OptimizerStep"};
  CHECK(std::count(sync.plan.inter_iter_deps.begin(), sync.plan.inter_iter_deps.end(), sync_dep) == 1);
  CHECK(std::count(preset.plan().inter_iter_deps.begin(), preset.plan().inter_iter_deps.end(),
                   sync_dep) == 0);
  CHECK(presets::make_preset("semi_sync").phases[0].batches == 900);  // TorchRec's default

  CHECK(presets::make_preset("semi_sync", {.start_batch = 0}).phases.size() == 1);
  CHECK_THROWS_WITH_AS(presets::make_preset("semi_sync", {.start_batch = -1}),
                       doctest::Contains("start_batch"), std::invalid_argument);
}

TEST_CASE("pt2 is serial at depth 1 and compiles on iteration compile_on_iter") {
  int compiled = 0;
  const auto preset = presets::make_preset("pt2", {.compile = [&] { ++compiled; }});
  REQUIRE(preset.phases.size() == 2);
  CHECK(preset.phases[0].label == "eager");
  CHECK(preset.phases[0].batches == 2);  // iterations 1 and 2; the 3rd compiles
  CHECK_FALSE(preset.phases[0].on_enter);
  REQUIRE(preset.phases[1].on_enter);
  preset.phases[1].on_enter();
  CHECK(compiled == 1);
  for (const auto& phase : preset.phases) CHECK(swp::validate(phase.plan).depth() == 1);

  CHECK(presets::make_preset("pt2", {.compile_on_iter = 1}).phases.size() == 1);
  CHECK_THROWS_WITH_AS(presets::make_preset("pt2", {.compile_on_iter = 0}),
                       doctest::Contains("compile_on_iter"), std::invalid_argument);
}

TEST_CASE("eval_sparse_dist loads on a background lane that wants its own thread") {
  const auto preset = presets::make_preset("eval_sparse_dist");
  CHECK(task_of(preset.plan(), "H2D").schedule.thread_group == "loader");
  CHECK(preset.dedicated_lanes == std::set<std::string>{"loader"});
  const auto custom = presets::make_preset("eval_sparse_dist", {.loader_lane = "io"});
  CHECK(task_of(custom.plan(), "H2D").schedule.thread_group == "io");
  CHECK(custom.dedicated_lanes == std::set<std::string>{"io"});
  for (const char* name : {"eval_sparse_dist", "eval_fused_sparse_dist"}) {
    const auto eval = presets::make_preset(name);
    for (const auto& t : eval.plan().tasks) {
      CHECK(t.task.name != "Backward");
      CHECK(t.task.name != "OptimizerStep");
    }
  }
}

TEST_CASE("staged turns the user's stage list into one event-synchronized stage each") {
  SUBCASE("seed 000's example: data_copy then gpu_postproc, each on a stream of its own") {
    const auto plan = presets::make_preset("staged").plan();
    REQUIRE(plan.tasks.size() == 2);
    CHECK(task_of(plan, "data_copy").schedule == swp::TaskSchedule{.stage = 0, .stream = "data_copy"});
    CHECK(task_of(plan, "gpu_postproc").schedule ==
          swp::TaskSchedule{.stage = 1, .stream = "gpu_postproc"});
    CHECK(plan.intra_iter_deps == std::vector<swp::Dependency>{{"gpu_postproc", "data_copy"}});
  }
  SUBCASE("a user's three stages, one sharing a stream") {
    const auto plan = presets::make_preset(
        "staged", {.stages = {{"copy", "memcpy"}, {"postproc", ""}, {"sdd", "data_dist"}}}).plan();
    const auto graph = swp::validate(plan);
    CHECK(graph.depth() == 3);
    CHECK(task_of(plan, "postproc").schedule.stream == "postproc");
    CHECK(task_of(plan, "sdd").schedule.stage == 2);
    CHECK(plan.intra_iter_deps ==
          std::vector<swp::Dependency>{{"postproc", "copy"}, {"sdd", "postproc"}});
  }
  SUBCASE("callbacks are gathered in stage order") {
    std::string calls;
    const auto preset = presets::make_preset(
        "staged", {.stages = {{"a", "", [&] { calls += "fa "; }, [&] { calls += "xa "; }},
                              {"b", "", [&] { calls += "fb "; }, {}}}});
    REQUIRE(preset.on_filled);
    REQUIRE(preset.on_data_exhausted);
    preset.on_filled();
    preset.on_data_exhausted();
    CHECK(calls == "fa fb xa ");
  }
  SUBCASE("bad stage lists are refused naming the stage") {
    CHECK_THROWS_AS(presets::make_preset("staged", {.stages = {{"x", ""}, {"x", ""}}}),
                    swp::PlanError);
    CHECK_THROWS_WITH_AS(presets::make_preset("staged", {.stages = {{"x", ""}, {"", ""}}}),
                         doctest::Contains("stage 1"), std::invalid_argument);
  }
}

TEST_CASE("an unknown preset name is an error listing the known ones") {
  CHECK_THROWS_WITH_AS(presets::make_preset("sparse_dsit"),
                       doctest::Contains("unknown preset 'sparse_dsit'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(presets::make_preset("x"), doctest::Contains("sparse_dist_comp_autograd"),
                       std::invalid_argument);
}

TEST_CASE("every phase of every preset is valid and has the same tasks") {
  for (const auto& info : presets::preset_catalogue()) {
    CAPTURE(info.name);
    const auto preset = presets::make_preset(info.name);
    REQUIRE_FALSE(preset.phases.empty());
    std::vector<std::string> first;
    for (const auto& t : preset.phases.front().plan.tasks) first.push_back(t.task.name);
    for (const auto& phase : preset.phases) {
      CHECK_NOTHROW((void)swp::validate(phase.plan));
      std::vector<std::string> names;
      for (const auto& t : phase.plan.tasks) names.push_back(t.task.name);
      CHECK(names == first);
      CHECK(preset.phase(phase.label) == &phase);
    }
    CHECK(preset.phase("no such phase") == nullptr);
  }
}

TEST_SUITE_END();

}  // namespace test_preset_registry
