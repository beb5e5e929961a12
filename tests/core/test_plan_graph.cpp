#include "swp/core/plan_graph.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/names.hpp"
#include "support/plans.hpp"
#include "support/seed.hpp"
#include "support/text.hpp"
#include "swp/core/plan_json.hpp"

namespace test_plan_graph {  // each test file's names apart (unity builds)

using swp::PlanRule;
using swp::test::contains;
using swp::test::make_plan;

namespace {

std::vector<swp::TaskIndex> as_vector(std::span<const swp::TaskIndex> s) {
  return {s.begin(), s.end()};
}

// Validates `plan`, which must fail; returns the error.
swp::PlanError rejection(const swp::PipelinePlan& plan) {
  try {
    (void)swp::validate(plan);
  } catch (const swp::PlanError& e) {
    return e;
  }
  FAIL("validate() accepted a plan that breaks a rule");
  throw std::logic_error("unreachable");
}

// The only violation of `plan`, which must break exactly one rule.
swp::PlanViolation only_violation(const swp::PipelinePlan& plan) {
  const auto error = rejection(plan);
  REQUIRE(error.violations().size() == 1);
  return error.violations().front();
}

}  // namespace

TEST_CASE("a valid plan resolves into a graph of indices in declaration order") {
  const auto graph = swp::validate(swp::test::sparse_dist_plan());
  REQUIRE(graph.size() == 8);
  CHECK(graph.depth() == 3);
  CHECK(graph.name(0) == "H2D");
  CHECK(graph.stage(0) == 0);
  CHECK(graph.stream(0) == "memcpy");
  CHECK(graph.lane(0) == "default");
  CHECK(graph.schedule(1).globally_ordered);
  CHECK(graph.task(7).task.name == "OptimizerStep");
  CHECK(graph.cost(0) == swp::SyntheticCost{});

  CHECK(graph.find("Forward") == swp::TaskIndex{5});
  CHECK_FALSE(graph.find("Nope").has_value());
  CHECK_FALSE(graph.find("").has_value());

  // Forward depends on InputDistWait, then WaitBatch, in the order they were declared.
  CHECK(as_vector(graph.intra_deps(5)) == std::vector<swp::TaskIndex>{2, 4});
  CHECK(as_vector(graph.intra_deps(4)) == std::vector<swp::TaskIndex>{2, 3});
  CHECK(graph.intra_deps(0).empty());
  CHECK(as_vector(graph.inter_deps(5)) == std::vector<swp::TaskIndex>{7});
  CHECK(graph.inter_deps(7).empty());
}

TEST_CASE("the depth is inferred as max(stage) + 1 when not declared") {
  CHECK(swp::validate(make_plan({{"A", 0}})).depth() == 1);
  CHECK(swp::validate(make_plan({{"A", 0}, {"B", 4}, {"C", 1}})).depth() == 5);
  CHECK(swp::validate(make_plan({{"A", 2}})).depth() == 3);
}

TEST_CASE("duplicated dependency pairs are kept with their multiplicity") {
  const auto graph =
      swp::validate(make_plan({{"A"}, {"B"}}, {{"B", "A"}, {"B", "A"}}, {{"A", "B"}, {"A", "B"}}));
  CHECK(as_vector(graph.intra_deps(1)) == std::vector<swp::TaskIndex>{0, 0});
  CHECK(as_vector(graph.inter_deps(0)) == std::vector<swp::TaskIndex>{1, 1});
}

TEST_CASE("every seed plan is valid") {
  for (const auto& name : swp::test::seed_plan_names()) {
    CAPTURE(name);
    const auto parsed = swp::load_plan(swp::test::seed_plan_path(name).string());
    const auto inspection = swp::inspect(parsed.plan);
    CHECK(inspection.valid());
    CHECK_FALSE(inspection.structurally_broken());
    CHECK_NOTHROW((void)swp::validate(parsed.plan));
    CHECK(inspection.graph.depth() == parsed.plan.pipeline_depth.value_or(inspection.graph.depth()));
  }
}

TEST_CASE("the topological order takes the smallest name among the tasks whose deps are done") {
  SUBCASE("names decide between ready tasks, not the declaration order") {
    const auto graph = swp::validate(make_plan({{"B"}, {"A"}, {"C"}}, {{"A", "C"}}));
    CHECK(graph.topological_order() == std::vector<swp::TaskIndex>{0, 2, 1});
    CHECK(graph.acyclic());
  }
  SUBCASE("the seed's worked example") {
    const auto graph = swp::validate(swp::test::sparse_dist_plan());
    CHECK(swp::test::names_of(graph, graph.topological_order()) ==
          std::vector<std::string>{"H2D", "InputDistStart", "InputDistWait", "ZeroGrad",
                                   "WaitBatch", "Forward", "Backward", "OptimizerStep"});
  }
  SUBCASE("stages and inter dependencies play no part") {
    const auto inspection =
        swp::inspect(make_plan({{"Z", 0}, {"Y", 3}, {"X", 1}}, {}, {{"X", "Y"}, {"Y", "Z"}}));
    CHECK(inspection.graph.topological_order() == std::vector<swp::TaskIndex>{2, 1, 0});
  }
  SUBCASE("equal names in an inspected plan: the smaller index first") {
    const auto inspection = swp::inspect(make_plan({{"X"}, {"W"}, {"X"}}));
    CHECK(inspection.graph.topological_order() == std::vector<swp::TaskIndex>{1, 0, 2});
  }
}

TEST_CASE("the topological order equals the brute-force one on random small plans") {
  std::mt19937 rng(swp::test::seed(424242));
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    // Random distinct names over a small alphabet, random stages (corollary 1 may break: the
    // graph is inspected, its order ignores stages), intra deps along a hidden random order.
    const int n = uniform(1, 12);
    swp::PipelinePlan plan;
    std::set<std::string> used;
    for (int t = 0; t < n; ++t) {
      std::string name;
      do {
        name.clear();
        for (int k = uniform(1, 3); k > 0; --k) name += static_cast<char>('p' + uniform(0, 3));
      } while (!used.insert(name).second);
      plan.add(swp::PipelineTask{name}, swp::TaskSchedule{.stage = uniform(0, 2)});
    }
    std::vector<int> hidden(n);
    for (int t = 0; t < n; ++t) hidden[t] = t;
    std::shuffle(hidden.begin(), hidden.end(), rng);
    const double density = std::uniform_real_distribution<double>(0, 0.6)(rng);
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < density)
          plan.intra_iter_deps.push_back(
              {plan.tasks[hidden[j]].task.name, plan.tasks[hidden[i]].task.name});
    const auto graph = swp::inspect(plan).graph;

    // By definition: repeatedly the smallest name among the tasks whose deps are all placed.
    std::vector<swp::TaskIndex> expected;
    std::vector<bool> placed(graph.size(), false);
    while (expected.size() < graph.size()) {
      std::optional<swp::TaskIndex> best;
      for (swp::TaskIndex t = 0; t < graph.size(); ++t) {
        const auto deps = graph.intra_deps(t);
        const bool ready =
            !placed[t] && std::all_of(deps.begin(), deps.end(), [&](auto d) { return placed[d]; });
        if (ready && (!best || graph.name(t) < graph.name(*best))) best = t;
      }
      REQUIRE(best.has_value());
      placed[*best] = true;
      expected.push_back(*best);
    }
    CHECK(graph.topological_order() == expected);
    CHECK(graph.acyclic());
  }
}

TEST_CASE("name ranks order the tasks as their names do, equal names by index") {
  std::mt19937 rng(swp::test::seed(20261203));
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // Bytes that stress an 8-byte prefix: a zero (a short name pads with zeros), the largest
  // byte (a signed char would be negative), letters; long shared prefixes; equal names.
  const std::string alphabet{'\0', 'a', 'b', '\xff'};
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    swp::PipelinePlan plan;
    const std::string shared(static_cast<std::size_t>(uniform(0, 12)), 'p');
    const int n = uniform(1, 40);
    for (int t = 0; t < n; ++t) {
      std::string name = uniform(0, 1) == 0 ? shared : std::string();
      auto pick = [&](int hi) { return static_cast<std::size_t>(uniform(0, hi)); };
      for (int k = uniform(0, 10); k > 0; --k) name += alphabet[pick(3)];
      if (t > 0 && uniform(0, 7) == 0) name = plan.tasks[pick(t - 1)].task.name;
      plan.tasks.push_back({swp::PipelineTask{name}, swp::TaskSchedule{}, swp::SyntheticCost{}});
    }
    const auto graph = swp::inspect(plan).graph;
    std::vector<swp::TaskIndex> by_name(graph.size());
    for (swp::TaskIndex t = 0; t < graph.size(); ++t) by_name[t] = t;
    std::ranges::sort(by_name, [&](swp::TaskIndex a, swp::TaskIndex b) {
      const std::string_view x = graph.name(a), y = graph.name(b);
      return std::pair(x, a) < std::pair(y, b);
    });
    for (std::size_t k = 0; k < by_name.size(); ++k) CHECK(graph.name_rank(by_name[k]) == k);
  }
}

TEST_CASE("with an intra cycle the topological order holds the tasks before any cycle") {
  // A and B depend on each other, C on A (after the cycle); D and E are free of it.
  const auto inspection = swp::inspect(make_plan({{"A"}, {"B"}, {"C"}, {"D"}, {"E"}},
                                                 {{"A", "B"}, {"B", "A"}, {"C", "A"}, {"E", "D"}}));
  CHECK(inspection.structurally_broken());
  CHECK_FALSE(inspection.graph.acyclic());
  CHECK(inspection.graph.topological_order() == std::vector<swp::TaskIndex>{3, 4});
}

TEST_CASE("rule no_tasks: a plan must declare a task") {
  const auto v = only_violation(swp::PipelinePlan{});
  CHECK(v.rule == PlanRule::no_tasks);
  CHECK(contains(v.message, "no tasks"));

  SUBCASE("even with a declared depth") {
    swp::PipelinePlan plan;
    plan.pipeline_depth = 2;
    CHECK(only_violation(plan).rule == PlanRule::no_tasks);
  }
}

TEST_CASE("rule empty_name: every task needs a name") {
  const auto v = only_violation(make_plan({{"A"}, {""}}));
  CHECK(v.rule == PlanRule::empty_name);
  CHECK(contains(v.message, "#1"));
  CHECK(contains(v.message, "empty name"));
}

TEST_CASE("rule control_character: names hold no control characters, and are shown escaped") {
  // They reached terminals raw and broke `swp order`'s one name per line.
  SUBCASE("a task name") {
    const auto v = only_violation(make_plan({{"A"}, {std::string("B\n\x1b[31m") + '\0'}}));
    CHECK(v.rule == PlanRule::control_character);
    CHECK(contains(v.message, "task #1's name 'B\\n\\x1b[31m\\x00'"));
  }
  SUBCASE("a stream and a lane name") {
    const auto error = rejection(make_plan({{"A", 0, "s\t", "lane\x7f"}}));
    REQUIRE(error.violations().size() == 2);
    CHECK(contains(error.what(), "stream 's\\t'"));
    CHECK(contains(error.what(), "thread group 'lane\\x7f'"));
  }
  SUBCASE("C1 controls and the Unicode line and paragraph separators, shown escaped") {
    // "A\u0085B" (NEL), "C\u009b2J" (CSI) and "D\u2028E" validated and split swp order's lines.
    const auto error = rejection(make_plan({{"A\xc2\x85"
                                             "B"},
                                            {"C\xc2\x9b"
                                             "2J"},
                                            {"D\xe2\x80\xa8"
                                             "E"},
                                            {"F\xe2\x80\xa9"}}));
    REQUIRE(error.violations().size() == 4);
    for (const auto& v : error.violations()) CHECK(v.rule == PlanRule::control_character);
    CHECK(contains(error.what(), "'A\\u0085B'"));
    CHECK(contains(error.what(), "'C\\u009b2J'"));
    CHECK(contains(error.what(), "'D\\u2028E'"));
    CHECK(contains(error.what(), "'F\\u2029'"));
    // Their neighbours are names: U+00A0, U+00A9, U+2027, U+202A.
    CHECK_NOTHROW((void)swp::validate(
        make_plan({{"\xc2\xa0"}, {"\xc2\xa9"}, {"\xe2\x80\xa7"}, {"\xe2\x80\xaa"}})));
  }
  SUBCASE("no message of any rule echoes one raw") {
    const auto error = rejection(make_plan({{"A\n"}}, {{"A\n", "Nobody\r"}}));
    const std::string what = error.what();
    CHECK(contains(what, "'Nobody\\r'"));
    for (const auto& v : error.violations())
      CHECK(std::none_of(v.message.begin(), v.message.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      }));
  }
}

TEST_CASE("validation refuses what the plan reader would: plan_to_json always reads back") {
  // validate() accepted these, then parse_plan(plan_to_json(p)) did not give p back: a Latin-1
  // name is written with U+FFFD for its bad byte (JSON must be UTF-8), so another name reads
  // back; an empty stream or lane name and a negative jitter_every are refused by the reader.
  const auto reads_back = [](const swp::PipelinePlan& plan) {
    try {
      const auto parsed = swp::parse_plan(swp::plan_to_json(plan)).plan;
      if (parsed.tasks.size() != plan.tasks.size() || parsed.stream_aliases != plan.stream_aliases)
        return false;
      for (std::size_t i = 0; i < plan.tasks.size(); ++i)
        if (parsed.tasks[i].task.name != plan.tasks[i].task.name ||
            !(parsed.tasks[i].schedule == plan.tasks[i].schedule))
          return false;
      return true;
    } catch (const swp::PlanFormatError&) {
      return false;
    }
  };
  SUBCASE("a task name that is not UTF-8, shown escaped") {
    const auto plan = make_plan({{"A"}, {"caf\xe9"}});
    REQUIRE_FALSE(reads_back(plan));
    CHECK(reads_back(make_plan({{"A"}, {"caf\xc3\xa9"}})));  // the same name in UTF-8 does
    const auto v = only_violation(plan);
    CHECK(v.rule == PlanRule::name_encoding);
    CHECK(swp::rule_name(v.rule) == "name encoding");
    CHECK(contains(v.message, "task #1's name 'caf\\xe9'"));
    CHECK(contains(v.message, "UTF-8"));
  }
  SUBCASE("a stream and a lane name that are not UTF-8, and UTF-8 that is") {
    const auto error =
        rejection(make_plan({{"A", 0, "s\xc3", "\xed\xa0\x80lane"}}));  // cut, surrogate
    REQUIRE(error.violations().size() == 2);
    CHECK(contains(error.what(), "stream 's\\xc3'"));
    CHECK(contains(error.what(), "thread group '\\xed\\xa0\\x80lane'"));
    CHECK_NOTHROW(
        (void)swp::validate(make_plan({{"caf\xc3\xa9", 0, "\xe6\xb5\x81", "\xf0\x9f\x9a\x80"}})));
  }
  SUBCASE("an empty stream or lane name names the task and the field") {
    auto plan = make_plan({{"A"}, {"B"}});
    plan.tasks[0].schedule.stream = "";
    plan.tasks[1].schedule.thread_group = "";
    REQUIRE_FALSE(reads_back(plan));
    const auto error = rejection(plan);
    REQUIRE(error.violations().size() == 2);
    CHECK(error.violations()[0].rule == PlanRule::empty_name);
    CHECK(contains(error.violations()[0].message, "task 'A' has an empty stream name"));
    CHECK(contains(error.violations()[1].message, "task 'B' has an empty thread group name"));
  }
  SUBCASE("a negative jitter_every") {
    auto plan = make_plan({{"A"}});
    plan.tasks[0].cost = {.cpu_us = 1, .jitter_every = -1};
    REQUIRE_FALSE(reads_back(plan));
    const auto v = only_violation(plan);
    CHECK(v.rule == PlanRule::cost_limit);
    CHECK(contains(v.message, "task 'A' has jitter_every -1"));
  }
  SUBCASE("a stream alias or target that is not UTF-8 or holds a control character") {
    auto plan = make_plan({{"A", 0, "x\xff"}, {"B", 0, "y"}});
    plan.stream_aliases = {{"x\xff", "s"}, {"y", "t\n"}};
    REQUIRE_FALSE(reads_back(plan));
    const auto error = rejection(plan);
    CHECK(contains(error.what(), "'x\\xff'"));
    CHECK(contains(error.what(), "'t\\n'"));
  }
}

TEST_CASE("rule duplicate_name: names are unique") {
  const auto v = only_violation(make_plan({{"Forward"}, {"B"}, {"Forward", 1}}));
  CHECK(v.rule == PlanRule::duplicate_name);
  CHECK(v.tasks == std::vector<std::string>{"Forward"});
  CHECK(contains(v.message, "'Forward'"));
  CHECK(contains(v.message, "#0"));
  CHECK(contains(v.message, "#2"));
}

TEST_CASE("rule unknown_task: dependencies refer to tasks of this plan") {
  SUBCASE("an unknown name in intra_iter_deps") {
    const auto v = only_violation(make_plan({{"A"}, {"B"}}, {{"B", "A"}, {"B", "Ghost"}}));
    CHECK(v.rule == PlanRule::unknown_task);
    CHECK(v.tasks == std::vector<std::string>{"Ghost"});
    CHECK(contains(v.message, "'Ghost'"));
    CHECK(contains(v.message, "intra_iter_deps[1]"));
  }
  SUBCASE("an unknown name in inter_iter_deps, on the dependent side") {
    const auto v = only_violation(make_plan({{"A"}}, {}, {{"Phantom", "A"}}));
    CHECK(v.rule == PlanRule::unknown_task);
    CHECK(v.tasks == std::vector<std::string>{"Phantom"});
    CHECK(contains(v.message, "'Phantom'"));
    CHECK(contains(v.message, "inter_iter_deps[0]"));
  }
  SUBCASE("a handle from another plan") {
    swp::PipelinePlan other;
    other.add({"X"});
    other.add({"Y"});
    const auto foreign = other.add({"Z"});  // index 2, beyond this plan's tasks

    swp::PipelinePlan plan;
    const auto a = plan.add({"A"});
    plan.add({"B"});
    SUBCASE("whose index is out of range") { plan.intra_iter_deps = {{a, foreign}}; }
    SUBCASE("whose index names another task here") {
      plan.inter_iter_deps = {{a, swp::TaskHandle{1, "Y"}}};
    }
    const auto v = only_violation(plan);
    CHECK(v.rule == PlanRule::unknown_task);
    CHECK(v.tasks.size() == 1);
    CHECK(contains(v.message, "does not belong to this plan"));
    CHECK(contains(v.message, "'" + v.tasks[0] + "'"));
  }
  SUBCASE("the edges with unknown tasks are left out of an inspected graph") {
    const auto inspection = swp::inspect(make_plan({{"A"}, {"B"}}, {{"B", "A"}, {"B", "Ghost"}}));
    CHECK(inspection.structurally_broken());
    CHECK(as_vector(inspection.graph.intra_deps(1)) == std::vector<swp::TaskIndex>{0});
  }
}

TEST_CASE("rule negative_stage: stages start at 0") {
  const auto v = only_violation(make_plan({{"A", 0}, {"Early", -1}}));
  CHECK(v.rule == PlanRule::negative_stage);
  CHECK(v.tasks == std::vector<std::string>{"Early"});
  CHECK(contains(v.message, "'Early'"));
  CHECK(contains(v.message, "stage -1"));
}

TEST_CASE("rule stage_limit: stages are at most max_stage, and the depth stays representable") {
  static_assert(swp::max_stage == 4095);
  SUBCASE("max_stage itself is a valid stage") {
    CHECK(swp::validate(make_plan({{"A", swp::max_stage}, {"B", 0}})).depth() == 4096);
  }
  for (const int stage : {swp::max_stage + 1, 1'000'000, 1'000'000'000, 2'147'483'647}) {
    CAPTURE(stage);
    const auto plan = make_plan({{"Deep", stage}, {"B", 0}});
    const auto v = only_violation(plan);
    CHECK(v.rule == PlanRule::stage_limit);
    CHECK(v.tasks == std::vector<std::string>{"Deep"});
    CHECK(contains(v.message, "'Deep'"));
    CHECK(contains(v.message, "stage " + std::to_string(stage)));
    CHECK(contains(v.message, "4095"));
    const auto inspection = swp::inspect(plan);
    CHECK(inspection.structurally_broken());  // the analysis commands refuse it too
    CHECK(inspection.graph.depth() == 1);     // max_stage + 1 would overflow an int
  }
  SUBCASE("a declared depth is not compared with a stage beyond the limit") {
    auto plan = make_plan({{"A", 2'147'483'647}});
    plan.pipeline_depth = 7;
    CHECK(only_violation(plan).rule == PlanRule::stage_limit);
  }
  SUBCASE("extreme stages in corollary 3 do not overflow its message") {
    const auto error = rejection(make_plan({{"Low", -2'147'483'647 - 1}, {"High", 2'147'483'647}},
                                           {}, {{"Low", "High"}}));
    CHECK(error.breaks(PlanRule::corollary_3));
    CHECK(contains(error.what(), "(here 4294967295)"));
  }
}

TEST_CASE("rule cost_limit: synthetic costs lie within [0, max_cost_us], naming task and field") {
  static_assert(swp::max_cost_us == 1e9);
  auto with_cost = [](swp::SyntheticCost cost) {
    auto plan = make_plan({{"A"}, {"Costly"}});
    plan.tasks[1].cost = cost;
    return plan;
  };
  CHECK_NOTHROW((void)swp::validate(with_cost({.cpu_us = 1e9, .device_us = 1e9, .jitter_every = 2,
                                               .jitter_device_us = 1e9})));
  struct Case {
    swp::SyntheticCost cost;
    std::string field;
  };
  for (const auto& c : {Case{{.cpu_us = 1e16}, "cpu_us"}, Case{{.device_us = 1e12}, "device_us"},
                        Case{{.jitter_every = 3, .jitter_device_us = 2e9}, "jitter_device_us"},
                        Case{{.cpu_us = -1}, "cpu_us"},
                        Case{{.device_us = std::numeric_limits<double>::quiet_NaN()}, "device_us"}}) {
    CAPTURE(c.field);
    const auto plan = with_cost(c.cost);
    const auto v = only_violation(plan);
    CHECK(v.rule == PlanRule::cost_limit);
    CHECK(v.tasks == std::vector<std::string>{"Costly"});
    CHECK(contains(v.message, "'Costly'"));
    CHECK(contains(v.message, c.field));
    CHECK_FALSE(swp::inspect(plan).structurally_broken());  // only unsafe to run
  }
}

TEST_CASE("rule intra_cycle: the message prints the cycle task by task") {
  SUBCASE("a two-task cycle") {
    const auto v = only_violation(make_plan({{"A"}, {"B"}}, {{"A", "B"}, {"B", "A"}}));
    CHECK(v.rule == PlanRule::intra_cycle);
    CHECK(v.tasks == std::vector<std::string>{"A", "B"});
    CHECK(contains(v.message, "A -> B -> A"));
  }
  SUBCASE("a self-loop") {
    const auto v = only_violation(make_plan({{"Other"}, {"Loop"}}, {{"Loop", "Loop"}}));
    CHECK(v.rule == PlanRule::intra_cycle);
    CHECK(v.tasks == std::vector<std::string>{"Loop"});
    CHECK(contains(v.message, "Loop -> Loop"));
  }
  SUBCASE("a three-task cycle, printed along the dependencies") {
    const auto v = only_violation(
        make_plan({{"A"}, {"B"}, {"C"}, {"D"}}, {{"A", "B"}, {"B", "C"}, {"C", "A"}, {"D", "A"}}));
    CHECK(v.rule == PlanRule::intra_cycle);
    CHECK(v.tasks == std::vector<std::string>{"A", "B", "C"});
    CHECK(contains(v.message, "A -> B -> C -> A"));
    CHECK_FALSE(contains(v.message, "D"));
  }
  SUBCASE("two separate cycles are two violations") {
    const auto error = rejection(
        make_plan({{"A"}, {"B"}, {"C"}, {"D"}}, {{"A", "B"}, {"B", "A"}, {"C", "D"}, {"D", "C"}}));
    REQUIRE(error.violations().size() == 2);
    CHECK(contains(error.what(), "A -> B -> A"));
    CHECK(contains(error.what(), "C -> D -> C"));
  }
  SUBCASE("one violation per cyclic component, each its shortest cycle, in task order") {
    // A self-loop inside a larger component is that component's shortest cycle; the searches
    // of many components share their scratch (reports on 10^5 self-loops were quadratic).
    const auto error = rejection(make_plan(
        {{"A"}, {"B"}, {"C"}, {"D"}, {"E"}, {"F"}},
        {{"A", "B"}, {"B", "C"}, {"C", "A"}, {"B", "B"}, {"D", "D"}, {"E", "F"}, {"F", "E"}}));
    REQUIRE(error.violations().size() == 3);
    CHECK(error.violations()[0].tasks == std::vector<std::string>{"A", "B", "C"});
    CHECK(contains(error.violations()[0].message, "A -> B -> C -> A"));
    CHECK(error.violations()[1].tasks == std::vector<std::string>{"D"});
    CHECK(contains(error.violations()[2].message, "E -> F -> E"));
  }
  SUBCASE("many self-loops: one violation each") {
    constexpr int n = 20'000;
    swp::PipelinePlan plan;
    for (int i = 0; i < n; ++i) {
      const auto t = plan.add({swp::test::numbered("t", i)});
      plan.intra_iter_deps.push_back({t, t});
    }
    const auto error = rejection(plan);
    REQUIRE(error.violations().size() == n);
    CHECK(error.violations().back().tasks == std::vector<std::string>{"t19999"});
  }
  SUBCASE("a duplicated edge is no cycle") {
    CHECK_NOTHROW((void)swp::validate(make_plan({{"A"}, {"B"}}, {{"B", "A"}, {"B", "A"}})));
  }
  SUBCASE("inter-iteration dependencies never form an intra-iteration cycle") {
    CHECK_NOTHROW(
        (void)swp::validate(make_plan({{"A"}, {"B"}}, {{"B", "A"}}, {{"A", "B"}, {"A", "A"}})));
  }
}

TEST_CASE("rule corollary_1: an intra dependency needs dep.stage <= task.stage") {
  SUBCASE("a dependency one stage later is rejected, naming both tasks") {
    const auto v = only_violation(make_plan({{"Early", 0}, {"Late", 1}}, {{"Early", "Late"}}));
    CHECK(v.rule == PlanRule::corollary_1);
    CHECK(v.tasks == std::vector<std::string>{"Early", "Late"});
    CHECK(contains(v.message, "'Early' (stage 0)"));
    CHECK(contains(v.message, "'Late' (stage 1)"));
  }
  SUBCASE("the same stage and earlier stages are accepted") {
    CHECK_NOTHROW((void)swp::validate(
        make_plan({{"A", 0}, {"B", 0}, {"C", 3}}, {{"B", "A"}, {"C", "A"}, {"C", "B"}})));
  }
}

TEST_CASE("rule corollary_3: an inter dependency needs dep.stage - task.stage <= 1") {
  SUBCASE("a gap of 2 is rejected, naming both tasks") {
    const auto v = only_violation(make_plan({{"T", 0}, {"D", 2}}, {}, {{"T", "D"}}));
    CHECK(v.rule == PlanRule::corollary_3);
    CHECK(v.tasks == std::vector<std::string>{"T", "D"});
    CHECK(contains(v.message, "'T' (stage 0)"));
    CHECK(contains(v.message, "'D' (stage 2)"));
    CHECK(contains(v.message, "here 2"));
  }
  SUBCASE("a gap of 3 is rejected too") {
    CHECK(only_violation(make_plan({{"T", 1}, {"D", 4}}, {}, {{"T", "D"}})).rule ==
          PlanRule::corollary_3);
  }
  SUBCASE("gaps of 1, 0 and negative gaps are accepted") {
    int task_stage = 0, dep_stage = 0;
    SUBCASE("gap 1") { task_stage = 0, dep_stage = 1; }
    SUBCASE("gap 0") { task_stage = 1, dep_stage = 1; }
    SUBCASE("gap -1") { task_stage = 1, dep_stage = 0; }
    SUBCASE("gap -3") { task_stage = 3, dep_stage = 0; }
    SUBCASE("a task on itself") { task_stage = dep_stage = 2; }
    CAPTURE(task_stage);
    CAPTURE(dep_stage);
    auto plan = make_plan({{"T", task_stage}, {"D", dep_stage}}, {}, {{"T", "D"}});
    if (task_stage == 2) plan.inter_iter_deps = {{"T", "T"}};
    CHECK(swp::inspect(plan).valid());
  }
}

TEST_CASE("rule depth_mismatch: a declared depth must be max(stage) + 1") {
  auto plan = make_plan({{"A", 0}, {"B", 2}, {"C", 2}});
  SUBCASE("too small") {
    plan.pipeline_depth = 2;
    const auto v = only_violation(plan);
    CHECK(v.rule == PlanRule::depth_mismatch);
    CHECK(v.tasks == std::vector<std::string>{"B", "C"});
    CHECK(contains(v.message, "pipeline_depth is 2"));
    CHECK(contains(v.message, "max(stage) + 1 is 3"));
    CHECK(contains(v.message, "'B', 'C'"));
  }
  SUBCASE("too large") {
    plan.pipeline_depth = 4;
    CHECK(only_violation(plan).rule == PlanRule::depth_mismatch);
  }
  SUBCASE("exact") {
    plan.pipeline_depth = 3;
    CHECK(swp::validate(plan).depth() == 3);
  }
}

TEST_CASE("stream aliases resolve each task's stream; the plan's name stays its label") {
  auto plan = make_plan({{"Dist", 1, "data_dist"}, {"Emb", 2, "emb_lookup"}, {"Fwd", 2},
                         {"Copy", 0, "memcpy"}});
  plan.stream_aliases = {{"emb_lookup", "data_dist"}, {"memcpy", "fresh"}};
  const auto graph = swp::validate(plan);
  CHECK(graph.stream(1) == "data_dist");  // shares Dist's stream
  CHECK(graph.stream_label(1) == "emb_lookup");
  CHECK(graph.schedule(1).stream == "emb_lookup");
  CHECK(graph.stream(0) == "data_dist");
  CHECK(graph.stream_label(0) == "data_dist");
  CHECK(graph.stream(2) == "default");
  CHECK(graph.stream(3) == "fresh");  // a target no task names is a stream all the same
  CHECK(graph.stream_label(3) == "memcpy");

  SUBCASE("aliasing a stream to default puts the task on the default stream") {
    plan.stream_aliases = {{"emb_lookup", "default"}};
    CHECK(swp::validate(plan).stream(1) == "default");
  }
  SUBCASE("without aliases stream and label agree") {
    plan.stream_aliases.clear();
    const auto plain = swp::validate(plan);
    for (swp::TaskIndex t = 0; t < plain.size(); ++t) CHECK(plain.stream(t) == plain.stream_label(t));
  }
}

TEST_CASE("a stream's priority comes from the tasks that set it, aliases resolved") {
  auto plan = make_plan({{"Copy", 0, "memcpy"}, {"Dist", 1, "data_dist"}, {"Emb", 2, "emb_lookup"},
                         {"Fwd", 2}, {"Wait", 1, "data_dist"}});
  plan.stream_aliases = {{"emb_lookup", "data_dist"}};
  plan.tasks[0].schedule.stream_priority = -1;
  plan.tasks[1].schedule.stream_priority = -2;
  const auto graph = swp::validate(plan);
  CHECK(graph.stream_priority(0) == -1);
  CHECK(graph.stream_priority(1) == -2);
  CHECK(graph.stream_priority(2) == -2);  // on data_dist through the alias, sets none itself
  CHECK(graph.stream_priority(4) == -2);  // on data_dist, sets none itself
  CHECK_FALSE(graph.stream_priority(3));  // default: no task gives it one
  // The distinct streams, by first use, each with its priority.
  CHECK(graph.streams() == std::vector<std::string>{"memcpy", "data_dist", "default"});
  const std::size_t of[] = {0, 1, 1, 2, 1};
  for (swp::TaskIndex t = 0; t < graph.size(); ++t) {
    CAPTURE(t);
    CHECK(graph.stream_index(t) == of[t]);
    CHECK(graph.streams()[graph.stream_index(t)] == graph.stream(t));
    CHECK(graph.priority_of_stream(graph.stream_index(t)) == graph.stream_priority(t));
  }

  SUBCASE("tasks agreeing on a stream's priority are valid") {
    plan.tasks[4].schedule.stream_priority = -2;
    plan.tasks[2].schedule.stream_priority = -2;
    CHECK(swp::validate(plan).stream_priority(4) == -2);
  }
}

TEST_CASE("the distinct lanes, by first use, and each task's") {
  const auto graph = swp::validate(make_plan({{"Load", 0, "default", "io"},
                                              {"Decode", 0, "default", "cpu"},
                                              {"Train", 1, "default", "io"},
                                              {"Log", 1, "default", "gpu"},
                                              {"Save", 2, "default", "cpu"}}));
  CHECK(graph.lanes() == std::vector<std::string>{"io", "cpu", "gpu"});
  const std::size_t of[] = {0, 1, 0, 2, 1};
  for (swp::TaskIndex t = 0; t < graph.size(); ++t) {
    CAPTURE(t);
    CHECK(graph.lane_index(t) == of[t]);
    CHECK(graph.lanes()[graph.lane_index(t)] == graph.lane(t));
  }
  CHECK(swp::validate(make_plan({{"A", 0}, {"B", 1}})).lanes().size() == 1);  // one default lane
}

TEST_CASE("rule stream_priority: two priorities for one stream name both tasks") {
  auto plan = make_plan({{"Copy", 0, "memcpy"}, {"Dist", 1, "data_dist"}, {"Emb", 2, "emb_lookup"},
                         {"Copy2", 0, "memcpy"}});
  plan.tasks[0].schedule.stream_priority = -1;
  plan.tasks[3].schedule.stream_priority = 2;
  auto v = only_violation(plan);
  CHECK(v.rule == PlanRule::stream_priority);
  CHECK(v.tasks == std::vector<std::string>{"Copy", "Copy2"});
  CHECK(v.message ==
        "stream priority: tasks 'Copy' and 'Copy2' run on stream 'memcpy' but give it priorities "
        "-1 and 2; a stream has one priority (give it on one task, or the same on each)");
  CHECK_FALSE(swp::is_structural(PlanRule::stream_priority));  // order and schedule still work
  CHECK(swp::rule_name(PlanRule::stream_priority) == "stream priority");

  SUBCASE("through an alias: the stream the work runs on counts") {
    plan.tasks[3].schedule.stream_priority.reset();
    plan.stream_aliases = {{"emb_lookup", "data_dist"}};
    plan.tasks[1].schedule.stream_priority = 0;
    plan.tasks[2].schedule.stream_priority = -1;
    v = only_violation(plan);
    CHECK(v.tasks == std::vector<std::string>{"Dist", "Emb"});
    CHECK(contains(v.message, "run on stream 'data_dist'"));
  }
}

TEST_CASE("rule stream_alias: an alias maps a used name to a real stream, in one step") {
  auto plan = make_plan({{"Dist", 0, "data_dist"}, {"Emb", 0, "emb_lookup"}, {"Emb2", 0, "emb_lookup"}});
  struct Case {
    const char* what;
    std::map<std::string, std::string> aliases;
    std::vector<std::string> tasks;
    std::string message;
  };
  for (const auto& c : std::vector<Case>{
           {"an alias of an alias", {{"emb_lookup", "data_dist"}, {"data_dist", "nccl"}},
            {"Emb", "Emb2"},
            "stream alias: 'emb_lookup' -> 'data_dist': 'data_dist' is itself an alias (of "
            "'nccl'); aliases resolve in one step, so a target must be a real stream"},
           {"an alias of itself", {{"emb_lookup", "emb_lookup"}}, {"Emb", "Emb2"},
            "stream alias: 'emb_lookup' -> 'emb_lookup': the alias names itself"},
           {"the default stream aliased away", {{"default", "data_dist"}}, {},
            "stream alias: 'default' -> 'data_dist': the default stream cannot be aliased"},
           {"an alias no task uses", {{"emb_lokup", "data_dist"}}, {},
            "stream alias: 'emb_lokup' -> 'data_dist': no task uses stream 'emb_lokup'"},
           {"an empty target", {{"emb_lookup", ""}}, {"Emb", "Emb2"},
            "stream alias: 'emb_lookup' -> '': the target is empty"},
           {"an empty alias name", {{"", "data_dist"}}, {},
            "stream alias: '' -> 'data_dist': the alias name is empty"},
       }) {
    CAPTURE(c.what);
    plan.stream_aliases = c.aliases;
    const auto v = only_violation(plan);
    CHECK(v.rule == PlanRule::stream_alias);
    CHECK(v.tasks == c.tasks);
    CHECK(contains(v.message, c.message));
  }

  SUBCASE("a cycle of two aliases is reported for both") {
    plan.tasks[0].schedule.stream = "a";
    plan.tasks[1].schedule.stream = "b";
    plan.stream_aliases = {{"a", "b"}, {"b", "a"}};
    const auto error = rejection(plan);
    REQUIRE(error.violations().size() == 2);
    CHECK(contains(error.what(), "'a' -> 'b': 'b' is itself an alias (of 'a')"));
    CHECK(contains(error.what(), "'b' -> 'a': 'a' is itself an alias (of 'b')"));
  }
  SUBCASE("the violation is not structural: the plan can still be described") {
    plan.stream_aliases = {{"emb_lokup", "data_dist"}};
    const auto inspection = swp::inspect(plan);
    CHECK_FALSE(inspection.valid());
    CHECK_FALSE(inspection.structurally_broken());
  }
}

TEST_CASE("every violation of a plan is reported at once") {
  auto plan = make_plan({{"A", 0}, {"A", 1}, {"Neg", -1}, {"Deep", 3}, {"Shallow", 0}},
                        {{"Shallow", "Deep"}, {"A", "Ghost"}}, {{"Shallow", "Deep"}});
  plan.pipeline_depth = 2;
  const auto error = rejection(plan);
  for (auto rule : {PlanRule::duplicate_name, PlanRule::negative_stage, PlanRule::unknown_task,
                    PlanRule::corollary_1, PlanRule::corollary_3, PlanRule::depth_mismatch}) {
    CAPTURE(swp::rule_name(rule));
    CHECK(error.breaks(rule));
  }
  CHECK(error.violations().size() == 6);
  const std::string what = error.what();
  CHECK(std::count(what.begin(), what.end(), '\n') == 6);
  for (const auto* name : {"'A'", "'Neg'", "'Ghost'", "'Shallow'", "'Deep'"}) {
    CAPTURE(name);
    CHECK(contains(what, name));
  }
}

TEST_CASE("inspect reports violations instead of throwing") {
  SUBCASE("a valid plan") {
    const auto inspection = swp::inspect(swp::test::sparse_dist_plan());
    CHECK(inspection.valid());
    CHECK_FALSE(inspection.structurally_broken());
    CHECK(inspection.graph.size() == 8);
  }
  SUBCASE("a plan that is only unsafe to run keeps its whole graph") {
    const auto plan = swp::test::pqra_plan();
    CHECK_THROWS_AS((void)swp::validate(plan), swp::PlanError);
    swp::Inspection inspection{};
    CHECK_NOTHROW(inspection = swp::inspect(plan));
    CHECK_FALSE(inspection.valid());
    CHECK_FALSE(inspection.structurally_broken());
    REQUIRE(inspection.violations.size() == 1);
    CHECK(inspection.violations[0].rule == PlanRule::corollary_1);
    CHECK(inspection.violations[0].tasks == std::vector<std::string>{"R", "Q"});
    CHECK(as_vector(inspection.graph.intra_deps(2)) == std::vector<swp::TaskIndex>{1});
  }
  SUBCASE("a structurally broken plan") {
    const auto inspection = swp::inspect(make_plan({{"A"}, {"A"}}));
    CHECK_FALSE(inspection.valid());
    CHECK(inspection.structurally_broken());
  }
  SUBCASE("an empty plan") {
    const auto inspection = swp::inspect(swp::PipelinePlan{});
    CHECK(inspection.structurally_broken());
    CHECK(inspection.graph.size() == 0);
  }
}

}  // namespace test_plan_graph
