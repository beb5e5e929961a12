#include "swp/core/enqueue_order.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/plans.hpp"
#include "support/seed.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/core/schedule_table.hpp"

namespace test_enqueue_order {  // each test file's names apart (unity builds)

using swp::OrderPolicy;
using swp::test::make_plan;
using swp::test::names_of;
using Names = std::vector<std::string>;

namespace {

// ---------------------------------------------------------------------------------------------
// A literal port of the seed's Python pseudocode (_build_enqueue_order_ready_first), working on
// names straight from the plan: dicts become std::map, the ready list a std::vector that is
// popped at the front and re-sorted after every release. Deliberately no heap and no PlanGraph,
// so it shares nothing with the library's implementation.
struct Reference {
  std::map<std::string, std::vector<std::string>> adj;  // dep -> [tasks]
  std::map<std::string, int> in_degree;
  std::map<std::string, int> stall_cost;
  Names order;
};

// `resort_after_release = false` gives the variant the seed's prose walks through (released
// tasks queue behind the initial ready list); only used to show the random plans tell them apart.
Reference reference_ready_first(const swp::PipelinePlan& plan, bool resort_after_release = true) {
  Reference ref;
  std::map<std::string, int> stage_map;
  std::map<std::string, std::string> stream_map;
  for (const auto& t : plan.tasks) {
    stage_map[t.task.name] = t.schedule.stage;
    stream_map[t.task.name] = t.schedule.stream;
    ref.in_degree[t.task.name] = 0;
    ref.stall_cost[t.task.name] = 0;
  }
  // --- Step 1: build period-local graph ---
  for (const auto& d : plan.intra_iter_deps) {
    const auto& task_name = d.task.name();
    const auto& dep_name = d.depends_on.name();
    if (stage_map[dep_name] == stage_map[task_name]) {  // same stage -> same period
      ref.adj[dep_name].push_back(task_name);
      ref.in_degree[task_name] += 1;
    }
  }
  for (const auto& d : plan.inter_iter_deps) {
    const auto& task_name = d.task.name();
    const auto& dep_name = d.depends_on.name();
    if (stage_map[dep_name] == stage_map[task_name] + 1) {  // k = 1 -> same period
      ref.adj[dep_name].push_back(task_name);
      ref.in_degree[task_name] += 1;
    }
  }
  // --- Step 2: compute stall_cost ---
  for (const auto& d : plan.intra_iter_deps) {
    const auto& task_name = d.task.name();
    const auto& dep_name = d.depends_on.name();
    if (stage_map[dep_name] == stage_map[task_name] &&
        stream_map[dep_name] != stream_map[task_name])
      ref.stall_cost[task_name] += 1;
  }
  for (const auto& d : plan.inter_iter_deps) {
    const auto& task_name = d.task.name();
    const auto& dep_name = d.depends_on.name();
    if (stage_map[dep_name] == stage_map[task_name] + 1 &&
        stream_map[dep_name] != stream_map[task_name])
      ref.stall_cost[task_name] += 1;
  }
  // --- Step 3: topo sort with stall_cost priority ---
  auto in_degree = ref.in_degree;
  auto by_key = [&](const std::string& a, const std::string& b) {
    return std::make_pair(ref.stall_cost[a], a) < std::make_pair(ref.stall_cost[b], b);
  };
  Names ready;
  for (const auto& [n, d] : in_degree)
    if (d == 0) ready.push_back(n);
  std::sort(ready.begin(), ready.end(), by_key);
  while (!ready.empty()) {
    const std::string name = ready.front();
    ready.erase(ready.begin());
    ref.order.push_back(name);
    for (const auto& succ : ref.adj[name]) {
      in_degree[succ] -= 1;
      if (in_degree[succ] == 0) {
        ready.push_back(succ);
        if (resort_after_release) std::sort(ready.begin(), ready.end(), by_key);
      }
    }
  }
  return ref;
}

// Stage-descending as the header describes it: stages from the highest down; within a stage a
// topological sort by name over that stage's intra-iteration edges (ready list re-sorted).
Names reference_stage_descending(const swp::PipelinePlan& plan) {
  std::map<std::string, int> stage_of;
  std::map<int, Names, std::greater<>> by_stage;
  for (const auto& t : plan.tasks) {
    stage_of[t.task.name] = t.schedule.stage;
    by_stage[t.schedule.stage].push_back(t.task.name);
  }
  Names order;
  for (auto& [stage, names] : by_stage) {
    std::map<std::string, int> in_degree;
    std::map<std::string, Names> adj;
    for (const auto& n : names) in_degree[n] = 0;
    for (const auto& d : plan.intra_iter_deps) {
      if (stage_of[d.task.name()] != stage || stage_of[d.depends_on.name()] != stage) continue;
      adj[d.depends_on.name()].push_back(d.task.name());
      in_degree[d.task.name()] += 1;
    }
    Names ready;
    for (const auto& [n, deg] : in_degree)
      if (deg == 0) ready.push_back(n);
    std::sort(ready.begin(), ready.end());
    while (!ready.empty()) {
      const std::string name = ready.front();
      ready.erase(ready.begin());
      order.push_back(name);
      for (const auto& succ : adj[name])
        if (--in_degree[succ] == 0) {
          ready.push_back(succ);
          std::sort(ready.begin(), ready.end());
        }
    }
  }
  return order;
}

std::vector<int> stall_costs(const swp::PlanGraph& graph, const Names& names) {
  const auto local = swp::period_local_graph(graph);
  std::vector<int> costs;
  for (const auto& n : names) costs.push_back(local.stall_cost[graph.find(n).value()]);
  return costs;
}

// ---------------------------------------------------------------------------------------------
// Random valid plans.

struct RandomPlan {
  swp::PipelinePlan plan;
  std::string description;
};

RandomPlan random_valid_plan(std::mt19937& rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0";
  static const std::string streams[] = {"default", "a", "b"};

  const int n = uniform(1, 14);
  std::set<std::string> used;
  RandomPlan out;
  std::vector<swp::TaskHandle> handles;
  std::vector<int> stage(n);
  for (int i = 0; i < n; ++i) {
    std::string name;
    do {
      name.clear();
      for (int k = uniform(1, 3); k > 0; --k) name += alphabet[uniform(0, alphabet.size() - 1)];
    } while (!used.insert(name).second);
    stage[i] = uniform(0, 3);
    handles.push_back(out.plan.add(
        {name}, {.stage = stage[i], .stream = streams[uniform(0, 2)],
                 .thread_group = chance(0.5) ? "default" : "other"}));
  }

  // A hidden random topological order keeps intra deps acyclic while letting a task depend on
  // tasks declared after it.
  std::vector<int> rank(n);
  for (int i = 0; i < n; ++i) rank[i] = i;
  std::shuffle(rank.begin(), rank.end(), rng);

  auto ref = [&](int i) -> swp::TaskRef {
    if (chance(0.5)) return handles[i];
    return handles[i].name;
  };
  const double density = std::uniform_real_distribution<double>(0, 0.6)(rng);
  for (int t = 0; t < n; ++t) {
    for (int d = 0; d < n; ++d) {
      if (rank[d] < rank[t] && stage[d] <= stage[t] && chance(density)) {
        out.plan.intra_iter_deps.push_back({ref(t), ref(d)});
        if (chance(0.1)) out.plan.intra_iter_deps.push_back({ref(t), ref(d)});
      }
      if (stage[d] - stage[t] <= 1 && chance(density / 2)) {
        out.plan.inter_iter_deps.push_back({ref(t), ref(d)});
        if (chance(0.1)) out.plan.inter_iter_deps.push_back({ref(t), ref(d)});
      }
    }
  }
  std::shuffle(out.plan.intra_iter_deps.begin(), out.plan.intra_iter_deps.end(), rng);
  std::shuffle(out.plan.inter_iter_deps.begin(), out.plan.inter_iter_deps.end(), rng);
  if (chance(0.5)) out.plan.pipeline_depth = *std::max_element(stage.begin(), stage.end()) + 1;
  out.description = swp::plan_to_json(out.plan);
  return out;
}

}  // namespace

TEST_CASE("policies have names and parse back") {
  CHECK(swp::policy_name(OrderPolicy::ready_first) == "ready-first");
  CHECK(swp::policy_name(OrderPolicy::stage_descending) == "stage-descending");

  OrderPolicy policy = OrderPolicy::ready_first;
  CHECK(swp::parse_policy("stage-descending", policy));
  CHECK(policy == OrderPolicy::stage_descending);
  CHECK(swp::parse_policy("ready-first", policy));
  CHECK(policy == OrderPolicy::ready_first);

  policy = OrderPolicy::stage_descending;
  for (const char* bad : {"", "ready_first", "Ready-First", "stage-descending ", "fifo"}) {
    CAPTURE(bad);
    CHECK_FALSE(swp::parse_policy(bad, policy));
    CHECK(policy == OrderPolicy::stage_descending);  // untouched on failure
  }
}

TEST_CASE("the SparseDist worked example: ready-first follows the pseudocode") {
  const auto graph = swp::validate(swp::test::sparse_dist_plan());

  SUBCASE("ready-first re-sorts after every release, so InputDistWait precedes ZeroGrad") {
    const Names expected{"H2D",      "InputDistStart", "InputDistWait", "ZeroGrad",
                         "WaitBatch", "Forward",       "Backward",      "OptimizerStep"};
    CHECK(names_of(graph, swp::enqueue_order(graph)) == expected);
    CHECK(names_of(graph, swp::enqueue_order(graph, OrderPolicy::ready_first)) == expected);
  }
  SUBCASE("stage-descending") {
    CHECK(names_of(graph, swp::enqueue_order(graph, OrderPolicy::stage_descending)) ==
          Names{"ZeroGrad", "WaitBatch", "Forward", "Backward", "OptimizerStep",
                "InputDistStart", "InputDistWait", "H2D"});
  }
  SUBCASE("its period-local graph keeps only the same-stage edges, all on one stream") {
    const auto local = swp::period_local_graph(graph);
    CHECK(local.in_degree == std::vector<int>{0, 0, 1, 0, 1, 1, 1, 1});
    CHECK(local.stall_cost == std::vector<int>(8, 0));
    CHECK(local.successors[0].empty());                                 // H2D
    CHECK(local.successors[1] == std::vector<swp::TaskIndex>{2});       // InputDistStart
    CHECK(local.successors[2].empty());                                 // InputDistWait
    CHECK(local.successors[3] == std::vector<swp::TaskIndex>{4});       // ZeroGrad
    CHECK(local.successors[4] == std::vector<swp::TaskIndex>{5});       // WaitBatch
    CHECK(local.successors[5] == std::vector<swp::TaskIndex>{6});       // Forward
    CHECK(local.successors[6] == std::vector<swp::TaskIndex>{7});       // Backward
    CHECK(local.successors[7].empty());  // the inter dep Forward <- OptimizerStep is k = 0
  }
}

TEST_CASE("the P/Q/R/A example: ready-first submits P before Q and A last") {
  bool r_depends_on_q = true;
  SUBCASE("as the seed writes it (R's dependency on Q breaks corollary 1)") {
    r_depends_on_q = true;
  }
  SUBCASE("without R's dependency, a valid plan") { r_depends_on_q = false; }
  CAPTURE(r_depends_on_q);

  const auto plan = swp::test::pqra_plan(r_depends_on_q);
  const auto inspection = swp::inspect(plan);
  CHECK(inspection.valid() == !r_depends_on_q);
  CHECK_FALSE(inspection.structurally_broken());
  const auto& graph = inspection.graph;

  const auto ready_first = names_of(graph, swp::enqueue_order(graph));
  CHECK(ready_first == Names{"P", "Q", "R", "A"});
  CHECK(stall_costs(graph, ready_first) == std::vector<int>{0, 0, 0, 1});

  // Stage 1 first, then stage 0 by name: no same-stage intra edge orders P, R and A.
  CHECK(names_of(graph, swp::enqueue_order(graph, OrderPolicy::stage_descending)) ==
        Names{"Q", "A", "P", "R"});

  const auto local = swp::period_local_graph(graph);
  CHECK(local.in_degree == std::vector<int>{0, 0, 0, 1});
  CHECK(local.successors[1] == std::vector<swp::TaskIndex>{3});  // Q -> A, k = 1
}

TEST_CASE("a cross-stream in-edge makes a ready task wait behind same-stream ones") {
  // C and Zed both become ready when A is released; C's in-edge crosses streams, so although
  // its name sorts first, Zed (stall 0) goes before it. Stage-descending only sorts by name.
  const auto graph = swp::validate(make_plan({{"A", 0, "x"}, {"C", 0, "y"}, {"Zed", 0, "x"}},
                                             {{"C", "A"}, {"Zed", "A"}}));
  CHECK(names_of(graph, swp::enqueue_order(graph)) == Names{"A", "Zed", "C"});
  CHECK(names_of(graph, swp::enqueue_order(graph, OrderPolicy::stage_descending)) ==
        Names{"A", "C", "Zed"});
}

TEST_CASE("stall cost compares the plan's stream names, so an alias leaves the order alone") {
  // As the seed's _stream_map: C stays behind Zed even when its stream y is an alias of x.
  auto plan = make_plan({{"A", 0, "x"}, {"C", 0, "y"}, {"Zed", 0, "x"}}, {{"C", "A"}, {"Zed", "A"}});
  plan.stream_aliases = {{"y", "x"}};
  const auto graph = swp::validate(plan);
  CHECK(swp::period_local_graph(graph).stall_cost == std::vector<int>{0, 1, 0});
  CHECK(names_of(graph, swp::enqueue_order(graph)) == Names{"A", "Zed", "C"});
}

TEST_CASE("duplicated dependency pairs count twice in the period-local graph") {
  const auto graph = swp::validate(
      make_plan({{"A", 0, "x"}, {"B", 0, "y"}, {"C", 1, "x"}}, {{"B", "A"}, {"B", "A"}},
                {{"B", "C"}}));
  const auto local = swp::period_local_graph(graph);
  CHECK(local.in_degree == std::vector<int>{0, 3, 0});
  CHECK(local.stall_cost == std::vector<int>{0, 3, 0});
  CHECK(local.successors[0] == std::vector<swp::TaskIndex>{1, 1});
  CHECK(local.successors[2] == std::vector<swp::TaskIndex>{1});
  CHECK(names_of(graph, swp::enqueue_order(graph)) == Names{"A", "C", "B"});
}

TEST_CASE("the period-local graph leaves out every dependency satisfied in an earlier period") {
  // Inspected, not validated: X's intra dep on Up breaks corollary 1 and its inter dep on Far
  // breaks corollary 3; neither is a same-period edge.
  const auto inspection = swp::inspect(make_plan(
      {{"X", 1, "s"}, {"Down", 0, "t"}, {"Up", 2, "t"}, {"Far", 3, "t"}, {"Same", 1, "t"}},
      {{"X", "Down"}, {"X", "Up"}, {"X", "Same"}},
      {{"X", "Down"}, {"X", "Same"}, {"X", "Up"}, {"X", "Far"}}));
  REQUIRE(inspection.violations.size() == 2);
  const auto local = swp::period_local_graph(inspection.graph);
  // Kept: intra X <- Same (same stage) and inter X <- Up (one stage above).
  CHECK(local.in_degree == std::vector<int>{2, 0, 0, 0, 0});
  CHECK(local.stall_cost == std::vector<int>{2, 0, 0, 0, 0});
  CHECK(local.successors[4] == std::vector<swp::TaskIndex>{0});  // Same
  CHECK(local.successors[2] == std::vector<swp::TaskIndex>{0});  // Up
  CHECK(local.successors[1].empty());                            // Down: earlier period
  CHECK(local.successors[3].empty());                            // Far: k = 2
}

TEST_CASE("an order of a graph with an intra-iteration cycle throws, naming the tasks") {
  const auto inspection =
      swp::inspect(make_plan({{"Free"}, {"A"}, {"B"}, {"After"}},
                             {{"A", "B"}, {"B", "A"}, {"After", "A"}}));
  REQUIRE(inspection.structurally_broken());
  for (auto policy : {OrderPolicy::ready_first, OrderPolicy::stage_descending}) {
    CAPTURE(swp::policy_name(policy));
    try {
      (void)swp::enqueue_order(inspection.graph, policy);
      FAIL("enqueue_order accepted a cyclic period-local graph");
    } catch (const swp::PlanError& e) {
      CHECK(e.breaks(swp::PlanRule::intra_cycle));
      REQUIRE(e.violations().size() == 1);
      CHECK(e.violations()[0].tasks == Names{"A", "B", "After"});
      CHECK(std::string(e.what()).find("'A', 'B', 'After'") != std::string::npos);
    }
  }
}

TEST_CASE("ready-first on every seed plan is the pseudocode's order") {
  for (const auto& name : swp::test::seed_plan_names()) {
    CAPTURE(name);
    const auto plan = swp::load_plan(swp::test::seed_plan_path(name).string()).plan;
    const auto graph = swp::validate(plan);
    CHECK(names_of(graph, swp::enqueue_order(graph)) == reference_ready_first(plan).order);
    CHECK(names_of(graph, swp::enqueue_order(graph, OrderPolicy::stage_descending)) ==
          reference_stage_descending(plan));
  }
}

TEST_CASE("on hundreds of random valid plans both orders match independent references") {
  std::mt19937 rng(swp::test::seed(20240603));
  int checked = 0, with_local_edges = 0, with_stalls = 0, fifo_differs = 0, policies_differ = 0;
  for (int round = 0; round < 600; ++round) {
    const auto random = random_valid_plan(rng);
    const auto& plan = random.plan;
    CAPTURE(round);
    INFO(random.description);
    const auto graph = swp::validate(plan);  // valid by construction
    const std::size_t n = graph.size();

    // ready-first: the literal port of the pseudocode.
    const auto reference = reference_ready_first(plan);
    const auto order = swp::enqueue_order(graph);
    REQUIRE(names_of(graph, order) == reference.order);
    if (reference_ready_first(plan, false).order != reference.order) ++fifo_differs;

    // The period-local graph agrees with the port's dicts.
    const auto local = swp::period_local_graph(graph);
    for (swp::TaskIndex t = 0; t < n; ++t) {
      CHECK(local.in_degree[t] == reference.in_degree.at(graph.name(t)));
      CHECK(local.stall_cost[t] == reference.stall_cost.at(graph.name(t)));
      if (local.in_degree[t] > 0) ++with_local_edges;
      if (local.stall_cost[t] > 0) ++with_stalls;
    }

    // ready-first is a permutation and a topological order of the period-local graph.
    std::vector<std::size_t> pos(n, n);
    for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
    REQUIRE(order.size() == n);
    REQUIRE(std::find(pos.begin(), pos.end(), n) == pos.end());
    for (swp::TaskIndex t = 0; t < n; ++t) {
      for (auto d : graph.intra_deps(t))
        if (graph.stage(d) == graph.stage(t)) CHECK(pos[d] < pos[t]);
      for (auto d : graph.inter_deps(t))
        if (graph.stage(d) == graph.stage(t) + 1) CHECK(pos[d] < pos[t]);
    }

    // stage-descending: stages never go up, same-stage intra deps come first.
    const auto descending = swp::enqueue_order(graph, OrderPolicy::stage_descending);
    REQUIRE(names_of(graph, descending) == reference_stage_descending(plan));
    if (descending != order) ++policies_differ;
    REQUIRE(descending.size() == n);
    std::vector<std::size_t> dpos(n, n);
    for (std::size_t i = 0; i < n; ++i) dpos[descending[i]] = i;
    for (std::size_t i = 1; i < n; ++i)
      CHECK(graph.stage(descending[i - 1]) >= graph.stage(descending[i]));
    for (swp::TaskIndex t = 0; t < n; ++t)
      for (auto d : graph.intra_deps(t))
        if (graph.stage(d) == graph.stage(t)) CHECK(dpos[d] < dpos[t]);
    ++checked;
  }
  CHECK(checked == 600);
  // The generator really exercises period-local edges and stall costs.
  CHECK(with_local_edges > 100);
  CHECK(with_stalls > 50);
  // ... and tells the pseudocode apart from a FIFO ready list and from stage-descending.
  CHECK(fifo_differs > 20);
  CHECK(policies_differ > 100);
}

TEST_CASE("orders and schedules of an inspected graph with extreme stages do not overflow") {
  // inspect() keeps a plan whose stages break the limit (validation refuses it), and its graph
  // still reaches the period-local order and the schedule: stage + 1 and period - stage
  // overflowed int for INT_MAX / INT_MIN (UBSan, `tools/test.sh`'s ASan+UBSan job).
  swp::PipelinePlan plan;
  plan.add({"Top"}, {.stage = std::numeric_limits<int>::max()});
  plan.add({"Bottom"}, {.stage = std::numeric_limits<int>::min()});
  plan.add({"Zero"}, {.stage = 0});
  plan.inter_iter_deps.push_back({"Top", "Bottom"});
  plan.inter_iter_deps.push_back({"Bottom", "Top"});
  const auto inspection = swp::inspect(plan);
  REQUIRE(inspection.structurally_broken());
  for (auto policy : {swp::OrderPolicy::ready_first, swp::OrderPolicy::stage_descending})
    CHECK(swp::enqueue_order(inspection.graph, policy).size() == 3);
  const std::string table = swp::format_schedule(inspection.graph, 2);
  CHECK(table.find("Zero") != std::string::npos);
}

}  // namespace test_enqueue_order
