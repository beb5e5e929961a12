#include "swp/core/plan_graph.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <ranges>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "concat.hpp"
#include "find_cycles.hpp"
#include "printable.hpp"
#include "swp/core/detail/successor_lists.hpp"
#include "swp/core/stage_rules.hpp"
#include "swp/core/topological_order.hpp"

namespace swp {

namespace {

// Quoted, and safe to print (a name with a control character is reported, not echoed raw).
// (Appended: "'" + std::string draws a false -Wrestrict from g++ 12 at -O3, GCC PR 105329.)
std::string quoted(const std::string& name) {
  std::string out = "'";
  out += detail::printable(name);
  out += '\'';
  return out;
}

// Rules control_character and name_encoding for one name: a control character would reach
// terminals and line-based outputs as it is, bytes that are no UTF-8 make a plan file (JSON)
// that no reader takes back. `whose()` gives what to call the name and the tasks involved,
// only spelt out for a report (validation of a large plan stays free of string building).
template <class Whose>
void check_name(const std::string& name, std::vector<PlanViolation>& violations, Whose whose) {
  if (detail::has_control_character(name)) {
    auto [what, tasks] = whose();
    violations.push_back(
        {PlanRule::control_character, std::move(tasks),
         detail::concat("control character: ", what, " ", quoted(name),
                        " holds a control character (shown escaped); names may not hold any")});
  }
  if (!detail::is_utf8(name)) {
    auto [what, tasks] = whose();
    violations.push_back({PlanRule::name_encoding, std::move(tasks),
                          detail::concat("name encoding: ", what, " ", quoted(name),
                                         " is not UTF-8 (shown escaped); plan files are UTF-8 "
                                         "JSON, so names must be")});
  }
}

struct Resolver {
  const PipelinePlan& plan;
  const PlanGraph& graph;
  std::vector<PlanViolation>& violations;

  // Resolves one reference of dependency list `list`[`pos`]; reports and returns nothing when
  // the reference does not name a task of this plan.
  std::optional<TaskIndex> operator()(const TaskRef& ref, const Dependency& dep,
                                      std::string_view list, std::size_t pos) const {
    // Only spelt out for a report: resolving stays free of string building.
    auto where = [&] {
      return detail::concat(list, "[", pos, "] (", quoted(dep.task.name()), " depends on ", quoted(dep.depends_on.name()), ")");
    };
    if (const TaskHandle* h = ref.handle()) {
      if (h->index >= plan.tasks.size() || plan.tasks[h->index].task.name != h->name) {
        violations.push_back({PlanRule::unknown_task, {h->name},
                              detail::concat("unknown task: ", where(), ": the handle of ", quoted(h->name), " (#", h->index, ") does not belong to this plan")});
        return std::nullopt;
      }
      return h->index;
    }
    if (const auto t = graph.find(ref.name())) return t;
    violations.push_back({PlanRule::unknown_task, {ref.name()},
                          detail::concat("unknown task: ", where(), ": no task is called ", quoted(ref.name()))});
    return std::nullopt;
  }
};

// Stream aliases resolve in one step, so each must map a name some task uses to a real
// stream: not empty, not "default" (tasks without a stream and the engines' serial mode use
// it by name), not itself, not another alias (chains and cycles are refused, not followed).
void check_stream_aliases(const PipelinePlan& plan, std::vector<PlanViolation>& violations) {
  if (plan.stream_aliases.empty()) return;
  // The tasks on each aliased stream, in task order: one pass over the tasks for all aliases.
  std::map<std::string_view, std::vector<std::string>> users_of;
  for (const auto& [alias, target] : plan.stream_aliases) users_of[alias];
  for (const auto& t : plan.tasks)
    if (auto it = users_of.find(t.schedule.stream); it != users_of.end())
      it->second.push_back(t.task.name);
  for (const auto& [alias, target] : plan.stream_aliases) {
    const auto& users = users_of[alias];
    const auto arrow = quoted(alias) + " -> " + quoted(target);
    auto report = [&](const std::string& why) {
      violations.push_back({PlanRule::stream_alias, users, "stream alias: " + arrow + ": " + why});
    };
    using Whose = std::pair<std::string, std::vector<std::string>>;
    check_name(alias, violations, [&] { return Whose{"stream alias", users}; });
    // Not `alias` in the lambda: clang 14 cannot capture a structured binding.
    const std::string alias_name = quoted(alias);
    check_name(target, violations, [&] {
      return Whose{detail::concat("the target of stream alias ", alias_name), users};
    });
    if (alias.empty()) {
      report("the alias name is empty");
    } else if (target.empty()) {
      report("the target is empty; an alias must name the stream it stands for");
    } else if (alias == "default") {
      report("the default stream cannot be aliased; alias the other stream to 'default' instead");
    } else if (alias == target) {
      report("the alias names itself; remove it, or name the stream it stands for");
    } else if (const auto next = plan.stream_aliases.find(target);
               next != plan.stream_aliases.end()) {
      report(detail::concat(quoted(target), " is itself an alias (of ", quoted(next->second),
                            "); aliases resolve in one step, so a target must be a real stream"));
    } else if (users.empty()) {
      report(detail::concat("no task uses stream ", quoted(alias),
                            " (a misspelt alias would leave a task on a stream of its own)"));
    }
  }
}

// Rule stream_priority: a stream has one priority. The first task that gives its stream one
// sets it; a task giving another is reported with that first task. `streams` are the
// distinct resolved streams (task t runs on streams[stream_of[t]]); the result is each one's
// priority, or nothing where no task gives one.
std::vector<std::optional<int>> stream_priorities(const std::vector<PlannedTask>& tasks,
                                                  const std::vector<std::string>& streams,
                                                  const std::vector<std::uint32_t>& stream_of,
                                                  std::vector<PlanViolation>& violations) {
  constexpr TaskIndex none = static_cast<TaskIndex>(-1);
  std::vector<TaskIndex> set_by(streams.size(), none);  // the first task giving a priority
  for (TaskIndex t = 0; t < tasks.size(); ++t) {
    const auto& mine = tasks[t].schedule.stream_priority;
    if (!mine) continue;
    TaskIndex& first = set_by[stream_of[t]];
    if (first == none) first = t;
    const auto& theirs = tasks[first].schedule.stream_priority;
    if (*theirs == *mine) continue;
    const auto& a = tasks[first].task.name;
    const auto& b = tasks[t].task.name;
    violations.push_back(
        {PlanRule::stream_priority, {a, b},
         detail::concat("stream priority: tasks ", quoted(a), " and ", quoted(b), " run on stream ",
                        quoted(streams[stream_of[t]]), " but give it priorities ", *theirs, " and ",
                        *mine, "; a stream has one priority (give it on one task, or the same on each)")});
  }
  std::vector<std::optional<int>> priorities(streams.size());
  for (std::size_t s = 0; s < streams.size(); ++s)
    if (set_by[s] != none) priorities[s] = tasks[set_by[s]].schedule.stream_priority;
  return priorities;
}

// The distinct names of name_of(t) over tasks 0..n-1, in the order of their first task, and
// each task's position among them. `name_of` returns a reference into the plan (the index
// holds views of it).
template <class NameOf>
void index_names(std::size_t n, NameOf name_of, std::vector<std::string>& names,
                 std::vector<std::uint32_t>& index_of) {
  std::unordered_map<std::string_view, std::uint32_t> index;
  index_of.resize(n);
  const std::string* previous = nullptr;  // tasks in a row often share a name: no lookup
  for (TaskIndex t = 0; t < n; ++t) {
    const std::string& name = name_of(t);
    if (previous != nullptr && name == *previous) {
      index_of[t] = index_of[t - 1];
      continue;
    }
    const auto [it, added] = index.try_emplace(name, static_cast<std::uint32_t>(names.size()));
    if (added) names.push_back(name);
    index_of[t] = it->second;
    previous = &name;
  }
}

// Rule cost_limit: every synthetic cost of `task` within [0, max_cost_us], naming the field.
void check_costs(const PlannedTask& task, std::vector<PlanViolation>& violations) {
  const SyntheticCost& c = task.cost;
  const std::pair<const char*, double> fields[] = {
      {"cpu_us", c.cpu_us}, {"device_us", c.device_us}, {"jitter_device_us", c.jitter_device_us}};
  for (const auto& [field, us] : fields) {
    if (us >= 0 && us <= max_cost_us) continue;
    violations.push_back({PlanRule::cost_limit, {task.task.name},
                          detail::concat("cost limit: task ", quoted(task.task.name), " has ", field, " ", us, "; synthetic costs are between 0 and ", max_cost_us, " us (1000 s)")});
  }
  if (c.jitter_every < 0)
    violations.push_back(
        {PlanRule::cost_limit,
         {task.task.name},
         detail::concat("cost limit: task ", quoted(task.task.name), " has jitter_every ",
                        c.jitter_every, "; it is an integer >= 0 (0: no jitter)")});
}

PlanViolation stage_violation(const PlanGraph& g, PlanRule rule, TaskIndex t, TaskIndex d) {
  if (rule == PlanRule::corollary_1) {
    return {PlanRule::corollary_1, {g.name(t), g.name(d)},
            detail::concat("corollary 1: ", quoted(g.name(t)), " (stage ", g.stage(t), ") depends within the iteration on ", quoted(g.name(d)), " (stage ", g.stage(d), "); an intra-iteration dependency needs dep.stage <= task.stage, otherwise ", quoted(g.name(t)), " waits for a later period and deadlocks (move ", quoted(g.name(d)), " to an earlier stage or declare the dependency in inter_iter_deps)")};
  }
  return {PlanRule::corollary_3, {g.name(t), g.name(d)},
          detail::concat("corollary 3: ", quoted(g.name(t)), " (stage ", g.stage(t), ") depends on ", quoted(g.name(d)), " (stage ", g.stage(d), ") of the previous iteration; an inter-iteration dependency needs dep.stage - task.stage <= 1 (here ", std::int64_t{g.stage(d)} - g.stage(t), "), otherwise the dependency runs in a future period: structural deadlock")};
}

// The first 8 bytes of `name`, big-endian, zero-padded: compared as integers, they order
// names as their bytes do, except where they are equal (then the names decide).
std::uint64_t name_prefix(std::string_view name) noexcept {
  std::uint64_t prefix = 0;
  for (std::size_t i = 0; i < 8; ++i)
    prefix = prefix << 8 | (i < name.size() ? static_cast<unsigned char>(name[i]) : 0U);
  return prefix;
}

// Each task's rank by (name, index), and the tasks in that order: the topological sort's key
// as one integer. Its heap compared names, scattered over the tasks, and at 100k tasks each
// comparison was a cache miss or two (10x the tasks took 17x the time). Here the tasks are
// sorted by the first 8 bytes of their names, a byte per pass (linear, where a comparison sort
// is n log n), and only tasks whose 8 bytes tie are compared by name.
struct NameRanks {
  std::vector<std::uint32_t> rank;  // by task
  std::vector<TaskIndex> order;     // by rank
};
NameRanks name_ranks(const PlanGraph& g) {
  struct Keyed {
    std::uint64_t prefix;
    TaskIndex task;
  };
  const std::size_t n = g.size();
  std::vector<Keyed> keyed(n), buffer(n);
  for (TaskIndex t = 0; t < n; ++t) keyed[t] = {name_prefix(g.name(t)), t};
  // Least significant byte first, each pass stable: equal prefixes stay in index order. A
  // byte every name has alike (a common first letter, the zeros after a short name) is skipped.
  for (int shift = 0; shift < 64; shift += 8) {
    std::array<std::size_t, 257> first{};
    for (const Keyed& k : keyed) ++first[(k.prefix >> shift & 0xff) + 1];
    if (std::ranges::find(first, n) != first.end()) continue;
    for (std::size_t b = 0; b < 256; ++b) first[b + 1] += first[b];
    for (const Keyed& k : keyed) buffer[first[k.prefix >> shift & 0xff]++] = k;
    keyed.swap(buffer);
  }
  for (std::size_t begin = 0; begin < n;) {
    std::size_t end = begin + 1;
    while (end < n && keyed[end].prefix == keyed[begin].prefix) ++end;
    if (end - begin > 1)
      std::sort(keyed.begin() + begin, keyed.begin() + end, [&g](const Keyed& a, const Keyed& b) {
        const int c = std::string_view(g.name(a.task)).compare(g.name(b.task));
        return c != 0 ? c < 0 : a.task < b.task;
      });
    begin = end;
  }
  NameRanks ranks{std::vector<std::uint32_t>(n), std::vector<TaskIndex>(n)};
  for (std::size_t k = 0; k < n; ++k) {
    ranks.rank[keyed[k].task] = static_cast<std::uint32_t>(k);
    ranks.order[k] = keyed[k].task;
  }
  return ranks;
}

// The intra dependencies' topological order, smallest name first (see
// PlanGraph::topological_order); `by_rank` lists the tasks by name rank, so the tasks ready
// from the start come sorted.
std::vector<TaskIndex> intra_order(const PlanGraph& g, const std::vector<TaskIndex>& by_rank) {
  const std::size_t n = g.size();
  const detail::SuccessorLists successors(n, [&g](TaskIndex t) { return g.intra_deps(t); });
  std::vector<int> in_degree(n, 0);
  for (TaskIndex t = 0; t < n; ++t) in_degree[t] = static_cast<int>(g.intra_deps(t).size());
  return topological_order(by_rank, successors, in_degree,
                           [&g](TaskIndex t) { return g.name_rank(t); });
}

// The task's own name, its stream's and its lane's; the stream's and the lane's are not empty
// either (the plan reader refuses "": "default" is the default stream and lane).
void check_names(const PlannedTask& task, TaskIndex t, std::vector<PlanViolation>& violations) {
  using Whose = std::pair<std::string, std::vector<std::string>>;
  check_name(task.task.name, violations, [&] {
    return Whose{detail::concat("task #", t, "'s name"), {task.task.name}};
  });
  const std::pair<const std::string&, const char*> fields[] = {
      {task.schedule.stream, "stream"}, {task.schedule.thread_group, "thread group"}};
  for (const auto& entry : fields) {
    // Not a structured binding: clang 14 cannot capture one in the lambda below.
    const std::string& name = entry.first;
    const char* const field = entry.second;
    if (name.empty()) {
      violations.push_back(
          {PlanRule::empty_name,
           {task.task.name},
           detail::concat("empty name: task ", quoted(task.task.name), " has an empty ", field,
                          " name (\"default\" is the default one)")});
      continue;
    }
    check_name(name, violations, [&] {
      return Whose{detail::concat("task #", t, "'s ", field), {task.task.name}};
    });
  }
}

std::string describe_cycle(const PlanGraph& g, const std::vector<TaskIndex>& cycle) {
  std::string text;
  for (TaskIndex t : cycle) text += g.name(t) + " -> ";
  return text + g.name(cycle.front());
}

}  // namespace

std::optional<TaskIndex> PlanGraph::find(std::string_view name) const {
  return find(name, std::hash<std::string_view>{}(name));
}

std::optional<TaskIndex> PlanGraph::find(std::string_view name, std::uint64_t hash) const {
  const std::size_t t = by_name_.find(hash, [&](std::size_t p) {
    return tasks_[p].task.name == name;
  });
  if (t == detail::FlatPositions::npos) return std::nullopt;
  return t;
}

PlanGraph PlanGraph::resolve(const PipelinePlan& plan, std::vector<PlanViolation>& violations) {
  PlanGraph g;
  g.tasks_ = plan.tasks;
  const std::size_t n = g.tasks_.size();
  g.by_name_.reserve(n);
  index_names(
      n, [&plan](TaskIndex t) -> const std::string& {
        return plan.device_stream(plan.tasks[t].schedule.stream);
      },
      g.streams_, g.stream_of_);
  index_names(
      n, [&plan](TaskIndex t) -> const std::string& { return plan.tasks[t].schedule.thread_group; },
      g.lanes_, g.lane_of_);

  if (n == 0) violations.push_back({PlanRule::no_tasks, {}, "no tasks: the plan declares no task"});

  bool stages_in_range = true;

  // The names' hashes first, so the index's slots for names a few tasks ahead are fetched
  // while this one is checked (see FlatPositions::prefetch): 10x the tasks then takes about
  // 10x the time, not 15x.
  std::vector<std::uint64_t> hashes(n);
  for (TaskIndex t = 0; t < n; ++t) hashes[t] = std::hash<std::string_view>{}(g.name(t));
  constexpr std::size_t ahead = 8;

  for (TaskIndex t = 0; t < n; ++t) {
    g.by_name_.prefetch(hashes[std::min(t + ahead, n - 1)]);
    const auto& name = g.name(t);
    if (name.empty()) {
      violations.push_back({PlanRule::empty_name, {},
                            detail::concat("empty name: task #", t, " has an empty name")});
      continue;
    }
    check_names(g.tasks_[t], t, violations);
    if (const auto first = g.find(name, hashes[t])) {
      violations.push_back({PlanRule::duplicate_name, {name},
                            detail::concat("duplicate name: tasks #", *first, " and #", t, " are both called ", quoted(name))});
    } else {
      g.by_name_.add(hashes[t], t);
    }
    if (g.stage(t) < 0) {
      violations.push_back({PlanRule::negative_stage, {name},
                            detail::concat("negative stage: task ", quoted(name), " has stage ", g.stage(t), "; stages start at 0")});
    } else if (g.stage(t) > max_stage) {
      stages_in_range = false;
      violations.push_back({PlanRule::stage_limit, {name},
                            detail::concat("stage limit: task ", quoted(name), " has stage ", g.stage(t), "; stages are at most ", max_stage, " (a depth of ", max_stage + 1, ")")});
    }
    check_costs(g.tasks_[t], violations);
  }

  const Resolver resolve_ref{plan, g, violations};
  auto resolve_list = [&](const std::vector<Dependency>& deps, std::string_view list) {
    std::vector<detail::EdgeLists::Edge> edges;
    edges.reserve(deps.size());
    for (std::size_t pos = 0; pos < deps.size(); ++pos) {
      const auto task = resolve_ref(deps[pos].task, deps[pos], list, pos);
      const auto dep = resolve_ref(deps[pos].depends_on, deps[pos], list, pos);
      if (task && dep) edges.emplace_back(*task, *dep);
    }
    return detail::EdgeLists(n, edges);
  };
  g.intra_ = resolve_list(plan.intra_iter_deps, "intra_iter_deps");
  g.inter_ = resolve_list(plan.inter_iter_deps, "inter_iter_deps");

  // Stages beyond the limit do not count: the depth of a broken plan stays representable.
  int deepest_stage = 0;
  for (TaskIndex t = 0; t < n; ++t)
    if (g.stage(t) <= max_stage) deepest_stage = std::max(deepest_stage, g.stage(t));
  g.depth_ = deepest_stage + 1;

  NameRanks ranks = name_ranks(g);
  g.name_rank_ = std::move(ranks.rank);
  g.topological_ = intra_order(g, ranks.order);
  // Only a graph the topological sort could not finish has cycles to name.
  if (!g.acyclic()) {
    for (const auto& cycle : detail::find_cycles(g.intra_)) {
      // A loop, not a views::transform: clang 14 (the fuzz build) cannot compile libstdc++
      // 12's views.
      std::vector<std::string> names;
      for (TaskIndex t : cycle) names.push_back(g.name(t));
      violations.push_back(
          {PlanRule::intra_cycle, std::move(names),
           detail::concat("intra-iteration cycle: ", describe_cycle(g, cycle), " (each task depends on the next within one iteration, so none can start)")});
    }
  }

  check_stage_rules(g, [&](TaskIndex t) { return g.stage(t); },
                    [&](PlanRule rule, TaskIndex t, TaskIndex d) {
                      violations.push_back(stage_violation(g, rule, t, d));
                      return true;
                    });

  if (plan.pipeline_depth && n > 0 && stages_in_range && *plan.pipeline_depth != g.depth_) {
    std::vector<std::string> deepest;
    for (TaskIndex t = 0; t < n; ++t)
      if (g.stage(t) == deepest_stage) deepest.push_back(g.name(t));
    std::string listed;
    for (const auto& name : deepest) listed += (listed.empty() ? "" : ", ") + quoted(name);
    violations.push_back(
        {PlanRule::depth_mismatch, deepest,
         detail::concat("depth mismatch: pipeline_depth is ", *plan.pipeline_depth, " but max(stage) + 1 is ", g.depth_, " (deepest stage ", deepest_stage, ": ", listed, ")")});
  }
  check_stream_aliases(plan, violations);
  g.stream_priorities_ = stream_priorities(g.tasks_, g.streams_, g.stream_of_, violations);
  return g;
}

bool Inspection::structurally_broken() const {
  return std::ranges::any_of(violations, [](const auto& v) { return is_structural(v.rule); });
}

Inspection inspect(const PipelinePlan& plan) {
  std::vector<PlanViolation> violations;
  PlanGraph graph = PlanGraph::resolve(plan, violations);
  return Inspection{std::move(graph), std::move(violations)};
}

PlanGraph validate(const PipelinePlan& plan) {
  auto inspection = inspect(plan);
  if (!inspection.valid()) throw PlanError(std::move(inspection.violations));
  return std::move(inspection.graph);
}

}  // namespace swp
