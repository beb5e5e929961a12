#pragma once
// Shared test helpers: plans from a compact description, the seeds' plans, names of an order,
// and the test data directory.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "swp/core/pipeline_plan.hpp"
#include "swp/core/plan_graph.hpp"

namespace swp::test {

/// One task of a compact plan description: `{"Forward", 2}` or `{"H2D", 0, "memcpy"}`.
struct TaskSpec {
  std::string name;
  int stage = 0;
  std::string stream = "default";
  std::string lane = "default";
};

/// A dependency by names: `{"Forward", "WaitBatch"}` reads "Forward depends on WaitBatch".
using DepSpec = std::pair<std::string, std::string>;

/// Builds a plan from names only; dependencies are referenced by name.
inline PipelinePlan make_plan(std::initializer_list<TaskSpec> tasks,
                              std::initializer_list<DepSpec> intra = {},
                              std::initializer_list<DepSpec> inter = {}) {
  PipelinePlan plan;
  for (const auto& t : tasks)
    plan.add(PipelineTask{t.name}, TaskSchedule{.stage = t.stage, .stream = t.stream,
                                                .thread_group = t.lane});
  for (const auto& [task, dep] : intra) plan.intra_iter_deps.push_back({task, dep});
  for (const auto& [task, dep] : inter) plan.inter_iter_deps.push_back({task, dep});
  return plan;
}

/// The task names of `order`, in order.
inline std::vector<std::string> names_of(const PlanGraph& graph,
                                         const std::vector<TaskIndex>& order) {
  std::vector<std::string> names;
  names.reserve(order.size());
  for (TaskIndex t : order) names.push_back(graph.name(t));
  return names;
}

/// The seed's worked example (TrainPipelineSparseDist): 8 tasks, 3 stages, 3 streams.
inline PipelinePlan sparse_dist_plan() {
  auto plan = make_plan(
      {
          {"H2D", 0, "memcpy"},
          {"InputDistStart", 1, "data_dist"},
          {"InputDistWait", 1, "data_dist"},
          {"ZeroGrad", 2},
          {"WaitBatch", 2},
          {"Forward", 2},
          {"Backward", 2},
          {"OptimizerStep", 2},
      },
      {
          {"InputDistStart", "H2D"},
          {"InputDistWait", "InputDistStart"},
          {"WaitBatch", "InputDistWait"},
          {"Forward", "InputDistWait"},
          {"WaitBatch", "ZeroGrad"},
          {"Forward", "WaitBatch"},
          {"Backward", "Forward"},
          {"OptimizerStep", "Backward"},
      },
      {{"Forward", "OptimizerStep"}});
  plan.tasks[1].schedule.globally_ordered = true;
  plan.pipeline_depth = 3;
  return plan;
}

/// The seed's P/Q/R/A example exactly as written: R intra-depends on Q one stage above it,
/// which breaks corollary 1 (pass `with_r_dep = false` for the valid variant without it).
inline PipelinePlan pqra_plan(bool with_r_dep = true) {
  PipelinePlan plan;
  auto p = plan.add({"P"}, {.stage = 0, .stream = "X"});
  auto q = plan.add({"Q"}, {.stage = 1, .stream = "Y"});
  auto r = plan.add({"R"}, {.stage = 0, .stream = "X"});
  auto a = plan.add({"A"}, {.stage = 0, .stream = "Z"});
  plan.intra_iter_deps = {{q, p}};
  if (with_r_dep) plan.intra_iter_deps.push_back({r, q});
  plan.inter_iter_deps = {{a, q}};
  return plan;
}

/// Root of the test data (tests/data in the source tree).
// The test data: where the build saw it, unless SWP_TEST_DATA_DIR names another place (the
// suite run on another machine from a copy of the tree, tools/gpu-check.sh).
inline std::filesystem::path data_dir() {
  if (const char* moved = std::getenv("SWP_TEST_DATA_DIR")) return moved;
  return SWP_TEST_DATA;
}

/// The lines of `text`, without their line breaks.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// The whole content of a file; throws when it cannot be read.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The seed000 plans, each with a `.json` plan and a `.table.txt` expected table.
inline const std::vector<std::string>& seed_plan_names() {
  static const std::vector<std::string> names{
      "base",          "fused_sparse_dist",         "prefetch_sparse_dist", "semi_sync",
      "sparse_dist",   "sparse_dist_comp_autograd", "sparse_dist_lite",
      // Plans seed 000 gives without a table; their tables were written by hand from its rules.
      "pt2",           "eval_sparse_dist",
  };
  return names;
}

inline std::filesystem::path seed_plan_path(const std::string& name) {
  return data_dir() / "seed000" / (name + ".json");
}

inline std::filesystem::path seed_table_path(const std::string& name) {
  return data_dir() / "seed000" / (name + ".table.txt");
}

/// A file under the system temp directory, removed when the object goes away.
class TempFile {
 public:
  explicit TempFile(const std::string& content, const std::string& suffix = ".json") {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("swp-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + suffix);
    std::ofstream out(path_, std::ios::binary);
    out << content;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace swp::test
