#include "find_cycles.hpp"

#include <algorithm>
#include <functional>
#include <span>

namespace swp::detail {

namespace {

// Tarjan's strongly connected components, iterative so deep chains cannot overflow the stack.
std::vector<int> component_of(const EdgeLists& deps) {
  const std::size_t n = deps.size();
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<bool> on_stack(n, false);
  std::vector<std::size_t> stack;
  int next_index = 0, next_comp = 0;
  struct Frame { std::size_t node; std::size_t edge; };
  for (std::size_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    std::vector<Frame> frames{{root, 0}};
    index[root] = low[root] = next_index++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!frames.empty()) {
      auto& [v, e] = frames.back();
      if (e < deps[v].size()) {
        const std::size_t w = deps[v][e++];
        if (index[w] < 0) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = true;
          frames.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::size_t w = 0;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = next_comp;
        } while (w != v);
        ++next_comp;
      }
      const std::size_t done = v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().node] = std::min(low[frames.back().node], low[done]);
    }
  }
  return comp;
}

// Shortest cycle through `start` that stays inside its component (breadth-first search).
// `parent` is scratch of size n holding n everywhere, and is left so: the search visits (and
// resets) only its component's nodes, so that the searches of all components together stay
// linear in the graph, however many cyclic components there are.
std::vector<std::size_t> cycle_through(std::size_t start, const EdgeLists& deps,
                                       const std::vector<int>& comp,
                                       std::vector<std::size_t>& parent) {
  const std::size_t n = deps.size();
  std::vector<std::size_t> visited;
  std::vector<std::size_t> cycle;
  std::vector<std::size_t> frontier{start};
  std::vector<std::size_t> sorted;
  while (!frontier.empty() && cycle.empty()) {
    std::vector<std::size_t> next;
    for (std::size_t v : frontier) {
      const std::span<const std::size_t> list = deps[v];
      sorted.assign(list.begin(), list.end());
      std::ranges::sort(sorted);
      for (std::size_t w : sorted) {
        if (comp[w] != comp[start]) continue;
        if (w == start) {
          cycle.push_back(v);
          while (cycle.back() != start) cycle.push_back(parent[cycle.back()]);
          std::ranges::reverse(cycle);
          break;
        }
        if (parent[w] == n) {
          parent[w] = v;
          visited.push_back(w);
          next.push_back(w);
        }
      }
      if (!cycle.empty()) break;
    }
    frontier = std::move(next);
  }
  for (std::size_t w : visited) parent[w] = n;
  return cycle;
}

}  // namespace

std::vector<std::vector<std::size_t>> find_cycles(const EdgeLists& deps) {
  const auto comp = component_of(deps);
  std::vector<std::size_t> size(deps.size(), 0);
  for (int c : comp) ++size[static_cast<std::size_t>(c)];
  std::vector<bool> reported(deps.size(), false);
  std::vector<std::size_t> parent(deps.size(), deps.size());
  std::vector<std::vector<std::size_t>> cycles;
  for (std::size_t v = 0; v < deps.size(); ++v) {
    const auto c = static_cast<std::size_t>(comp[v]);
    if (reported[c]) continue;
    const std::span<const std::size_t> list = deps[v];
    const bool self_loop = std::ranges::find(list, v) != list.end();
    if (size[c] < 2 && !self_loop) continue;
    reported[c] = true;
    // A task that depends on itself is its own shortest cycle.
    cycles.push_back(self_loop ? std::vector<std::size_t>{v} : cycle_through(v, deps, comp, parent));
  }
  return cycles;
}

}  // namespace swp::detail
