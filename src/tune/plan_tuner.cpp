#include "swp/tune/plan_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "swp/core/stage_rules.hpp"
#include "swp/tune/profiled_costs.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace swp {

namespace {

// What stage_assignments and the local search need of the plan's dependencies: the plan's own
// topological order and per-task lists. The rules themselves are core's (stage_rules.hpp).
struct StageRules {
  const PlanGraph& graph;
  const std::vector<TaskIndex>& topo;         // intra dependencies first, ties by name
  std::vector<std::vector<TaskIndex>> intra;  // t -> the tasks t depends on
  // t -> the inter dependencies (task, dep of the previous iteration) with t at either end.
  std::vector<std::vector<std::pair<TaskIndex, TaskIndex>>> inter_at;

  explicit StageRules(const PlanGraph& g)
      : graph(g), topo(g.topological_order()), intra(g.size()), inter_at(g.size()) {
    if (!g.acyclic())
      throw std::invalid_argument("stage_assignments: intra dependencies form a cycle");
    for (TaskIndex t = 0; t < g.size(); ++t) {
      intra[t].assign(g.intra_deps(t).begin(), g.intra_deps(t).end());
      for (TaskIndex d : g.inter_deps(t)) {
        inter_at[t].emplace_back(t, d);
        if (d != t) inter_at[d].emplace_back(t, d);
      }
    }
  }

  [[nodiscard]] bool holds(const StageAssignment& s, int max_depth) const {
    bool uses_zero = false;
    for (int stage : s) {
      if (stage < 0 || stage >= max_depth) return false;
      uses_zero = uses_zero || stage == 0;
    }
    return uses_zero && check_stage_rules(
                            graph, [&](TaskIndex t) { return s[t]; },
                            [](PlanRule, TaskIndex, TaskIndex) { return false; });
  }
};

// Depth-first enumeration in `topo` order; stops (returns false) once more than `limit` exist.
class Enumerator {
 public:
  Enumerator(const StageRules& rules, int max_depth, std::size_t limit)
      : rules_(rules), max_depth_(max_depth), limit_(limit), stages_(rules.intra.size(), -1) {}

  // Counts the assignments first, stopping past the limit, and keeps them only when they
  // all fit: a space far larger than a large limit (--max-candidates up to 1e7) held `limit`
  // assignments of every task before giving up (gigabytes, then std::bad_alloc).
  bool run() {
    if (!visit(0)) return false;  // more than `limit`: nothing kept
    found_.reserve(count_);
    keep_ = true;
    count_ = 0;
    return visit(0);
  }
  std::vector<StageAssignment>& found() { return found_; }

 private:
  bool visit(std::size_t k) {
    if (k == rules_.topo.size()) {
      if (std::find(stages_.begin(), stages_.end(), 0) == stages_.end()) return true;
      if (count_ == limit_) return false;
      ++count_;
      if (keep_) found_.push_back(stages_);
      return true;
    }
    const TaskIndex t = rules_.topo[k];
    for (int s = 0; s < max_depth_; ++s) {
      stages_[t] = s;
      if (intra_ok(t) && inter_ok(t) && !visit(k + 1)) return false;
    }
    stages_[t] = -1;
    return true;
  }

  // Corollary 1 for the intra dependencies of `t`, all assigned already (topological order).
  [[nodiscard]] bool intra_ok(TaskIndex t) const {
    for (TaskIndex d : rules_.intra[t])
      if (!intra_dep_stages_ok(stages_[t], stages_[d])) return false;
    return true;
  }

  // Corollary 3 for the inter dependencies of `t` whose other end is assigned already.
  [[nodiscard]] bool inter_ok(TaskIndex t) const {
    for (const auto& [task, dep] : rules_.inter_at[t]) {
      if (stages_[task] >= 0 && stages_[dep] >= 0 &&
          !inter_dep_stages_ok(stages_[task], stages_[dep]))
        return false;
    }
    return true;
  }

  const StageRules& rules_;
  int max_depth_;
  std::size_t limit_;
  StageAssignment stages_;
  bool keep_ = false;      // the second pass: store what the first one counted
  std::size_t count_ = 0;  // assignments met in this pass
  std::vector<StageAssignment> found_;
};

int depth_of(const StageAssignment& s) { return *std::max_element(s.begin(), s.end()) + 1; }

StageAssignment stages_of(const PipelinePlan& plan) {
  StageAssignment s;
  for (const auto& t : plan.tasks) s.push_back(t.schedule.stage);
  return s;
}

// A simulated candidate and what its ties are broken by.
struct Scored {
  StageAssignment stages;
  double us = 0;
  int depth = 0;
  bool is_input = false;
  int moved = 0;  // tasks whose stage differs from the input's
};

// True when `a` beats `b`: clearly faster, or as fast (sim times are exact; 1e-6 relative
// absorbs rounding) with a smaller depth, then the input's stages, then fewer tasks moved.
bool better(const Scored& a, const Scored& b) {
  const double tolerance = 1e-6 * std::max(a.us, b.us);
  if (std::abs(a.us - b.us) > tolerance) return a.us < b.us;
  if (a.depth != b.depth) return a.depth < b.depth;
  if (a.is_input != b.is_input) return a.is_input;
  if (a.moved != b.moved) return a.moved < b.moved;
  return a.stages < b.stages;
}

// Simulates candidates on the clock engine and sim backend, each stage assignment once.
class Evaluator {
 public:
  Evaluator(const PipelinePlan& plan, StageAssignment input, int iters)
      : plan_(plan), input_(std::move(input)), iters_(iters) {}

  // The steady-state time per iteration of `plan` over `iters` iterations, or over the
  // fewest that have a steady state at its depth when `iters` are fewer: a shorter run
  // measures its fill and drain too, which is not comparable with a longer or shallower one.
  // `option` names where `iters` came from ("iters" or "search_iters").
  double measure(const PipelinePlan& plan, int iters, const char* option) const {
    int depth = 1;
    for (const auto& t : plan.tasks) depth = std::max(depth, t.schedule.stage + 1);
    SyntheticRunOptions options;
    options.engine = EngineKind::clock;
    options.iters = static_cast<int>(std::max<std::int64_t>(iters, min_steady_iters(depth)));
    options.runtime.backend = Backend::sim;
    SyntheticRunResult run;
    try {
      run = run_synthetic(plan, options);
    } catch (const std::invalid_argument& e) {  // a run longer than its clock can count
      // Named by the option that asked for it.
      throw std::invalid_argument(std::string(option) + " " + std::to_string(iters) +
                                  (options.iters != iters
                                       ? " (run as " + std::to_string(options.iters) +
                                             " for a steady state at depth " +
                                             std::to_string(depth) + ")"
                                       : std::string()) +
                                  ": " + e.what());
    }
    if (!run.steady_state)
      throw std::logic_error("tune_plan: no steady state in " + std::to_string(options.iters) +
                             " iterations with " + std::to_string(run.slots) + " in flight");
    return run.us_per_iter;
  }
  double measure(const StageAssignment& s, int iters, const char* option) const {
    return measure(with_stages(plan_, s), iters, option);
  }

  const Scored& score(const StageAssignment& s) {
    auto it = seen_.find(s);
    if (it == seen_.end())
      it = seen_.emplace(s, scored(s, measure(s, iters_, "search_iters"))).first;
    return it->second;
  }
  [[nodiscard]] Scored scored(const StageAssignment& s, double us) const {
    int moved = 0;
    for (std::size_t t = 0; t < s.size(); ++t) moved += s[t] != input_[t] ? 1 : 0;
    return Scored{s, us, depth_of(s), s == input_, moved};
  }
  [[nodiscard]] bool seen(const StageAssignment& s) const { return seen_.contains(s); }
  [[nodiscard]] std::size_t count() const { return seen_.size(); }
  [[nodiscard]] const std::map<StageAssignment, Scored>& all() const { return seen_; }
  [[nodiscard]] const PipelinePlan& plan() const { return plan_; }

 private:
  PipelinePlan plan_;
  StageAssignment input_;
  int iters_;
  std::map<StageAssignment, Scored> seen_;
};

// Transitive closure of `edges` (t -> its direct neighbours), each set including t.
std::vector<std::vector<TaskIndex>> closure(const std::vector<std::vector<TaskIndex>>& edges) {
  std::vector<std::vector<TaskIndex>> out(edges.size());
  for (TaskIndex t = 0; t < edges.size(); ++t) {
    std::vector<bool> in(edges.size());
    std::vector<TaskIndex> stack{t};
    in[t] = true;
    while (!stack.empty()) {
      const TaskIndex u = stack.back();
      stack.pop_back();
      out[t].push_back(u);
      for (TaskIndex v : edges[u]) {
        if (in[v]) continue;
        in[v] = true;
        stack.push_back(v);
      }
    }
  }
  return out;
}

// Deterministic hill climbing from several starts, at most `budget` evaluations in all.
void local_search(const StageRules& rules, int max_depth, const StageAssignment& input,
                  std::size_t budget, Evaluator& eval) {
  const std::size_t n = rules.intra.size();
  std::vector<std::vector<TaskIndex>> feeds(n);
  for (TaskIndex t = 0; t < n; ++t)
    for (TaskIndex d : rules.intra[t]) feeds[d].push_back(t);
  const auto downstream = closure(feeds);      // t and every task that needs it
  const auto upstream = closure(rules.intra);  // t and every task it needs

  // Starts: the input clamped to the cap (clamping keeps both corollaries), all on stage 0,
  // and the topological levels clamped (as much pipelining as the cap allows).
  StageAssignment clamped = input, zero(n, 0), levels(n, 0);
  for (int& s : clamped) s = std::min(s, max_depth - 1);
  for (TaskIndex t : rules.topo)
    for (TaskIndex d : rules.intra[t]) levels[t] = std::max(levels[t], levels[d] + 1);
  for (int& s : levels) s = std::min(s, max_depth - 1);

  for (const StageAssignment& start : {clamped, zero, levels}) {
    if (!rules.holds(start, max_depth) || eval.count() >= budget) continue;
    Scored current = eval.score(start);
    for (;;) {
      std::vector<StageAssignment> moves;
      auto shift = [&](const std::vector<TaskIndex>& tasks, int by) {
        StageAssignment s = current.stages;
        for (TaskIndex t : tasks) s[t] += by;
        if (rules.holds(s, max_depth) && !eval.seen(s)) moves.push_back(std::move(s));
      };
      for (TaskIndex t = 0; t < n; ++t) {
        for (int by : {1, -1}) {
          shift({t}, by);
          shift(by > 0 ? downstream[t] : upstream[t], by);
        }
      }
      std::sort(moves.begin(), moves.end());
      moves.erase(std::unique(moves.begin(), moves.end()), moves.end());
      const Scored* best = nullptr;
      for (const auto& m : moves) {
        if (eval.count() >= budget) break;
        const Scored& s = eval.score(m);
        if (best == nullptr || better(s, *best)) best = &s;
      }
      if (best == nullptr || !better(*best, current)) break;
      current = *best;
    }
  }
}

}  // namespace

std::optional<std::vector<StageAssignment>> stage_assignments(const PlanGraph& graph, int max_depth,
                                                              std::size_t limit) {
  if (max_depth < 1) throw std::invalid_argument("max_depth must be at least 1");
  const StageRules rules(graph);
  Enumerator enumerator(rules, max_depth, limit);
  if (!enumerator.run()) return std::nullopt;
  return std::move(enumerator.found());
}

PipelinePlan with_stages(const PipelinePlan& plan, const StageAssignment& stages) {
  if (stages.size() != plan.tasks.size())
    throw std::invalid_argument("with_stages: " + std::to_string(stages.size()) + " stages for " +
                                std::to_string(plan.tasks.size()) + " tasks");
  PipelinePlan out = plan;
  for (std::size_t t = 0; t < stages.size(); ++t) out.tasks[t].schedule.stage = stages[t];
  out.pipeline_depth = stages.empty() ? 1 : depth_of(stages);
  return out;
}

TuneResult tune_plan(const PipelinePlan& plan, const TuneOptions& options) {
  if (options.max_depth < 0 || options.max_depth > max_tune_depth)
    throw std::invalid_argument("max_depth must be in 1.." + std::to_string(max_tune_depth) +
                                " (or 0: the plan's depth), got " +
                                std::to_string(options.max_depth));
  if (options.iters < 1 || options.search_iters < 1)
    throw std::invalid_argument("iters and search_iters must be at least 1");
  if (options.max_candidates == 0 || options.finalists == 0)
    throw std::invalid_argument("max_candidates and finalists must be at least 1");
  const PlanGraph graph = validate(plan);
  const int cap = options.max_depth > 0 ? options.max_depth : std::min(graph.depth(), max_tune_depth);
  const StageAssignment input = stages_of(plan);
  const StageRules rules(graph);
  // Simulated with the measured costs when given; the stages are the same either way.
  const PipelinePlan simulated =
      options.measured ? with_profiled_costs(plan, *options.measured, options.costless_on) : plan;
  Evaluator eval(simulated, input, options.search_iters);

  TuneResult result;
  result.max_depth = cap;
  result.baseline_depth = graph.depth();
  const bool input_fits = graph.depth() <= cap;
  // With no cap asked for, an input deeper than max_tune_depth is measured with the finalists
  // and may win: the limit bounds the search space, not the memory the user's plan holds, and
  // the answer must never be slower than what was given (an explicit cap may be).
  const bool input_competes = input_fits || options.max_depth == 0;
  // The input first: it is a candidate even when it leaves stage 0 empty.
  if (input_fits) eval.score(input);
  Enumerator enumerator(rules, cap, options.max_candidates);
  if (enumerator.run()) {
    result.exhaustive = true;
    for (const auto& s : enumerator.found()) eval.score(s);
  } else {
    local_search(rules, cap, input, options.max_candidates, eval);
  }
  result.candidates = eval.count();

  // The finalists, best first, measured again over `iters` with the input. Ranked on exact
  // keys (a strict weak order, which `better` with its tolerance is not).
  std::vector<Scored> ranked;
  for (const auto& [stages, scored] : eval.all()) ranked.push_back(scored);
  std::sort(ranked.begin(), ranked.end(), [](const Scored& a, const Scored& b) {
    return std::tie(a.us, a.depth, b.is_input, a.moved, a.stages) <
           std::tie(b.us, b.depth, a.is_input, b.moved, b.stages);
  });
  ranked.resize(std::min(ranked.size(), options.finalists));
  if (input_competes &&
      std::none_of(ranked.begin(), ranked.end(), [](const Scored& s) { return s.is_input; }))
    ranked.push_back(eval.scored(input, 0));
  std::optional<Scored> winner;
  for (const auto& f : ranked) {
    const Scored full = eval.scored(f.stages, eval.measure(f.stages, options.iters, "iters"));
    if (f.is_input) result.baseline_us_per_iter = full.us;
    if (!winner || better(full, *winner)) winner = full;
  }
  if (!input_competes)
    result.baseline_us_per_iter = eval.measure(eval.plan(), options.iters, "iters");

  result.kept_deep_input = !input_fits && winner->is_input;
  result.best = with_stages(plan, winner->stages);
  result.us_per_iter = winner->us;
  result.depth = winner->depth;
  return result;
}

}  // namespace swp
