#include "step_ops.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace dlrm {

const char* op_name(Op op) {
  switch (op) {
    case Op::parse: return "parse";
    case Op::dist_start: return "input dist start";
    case Op::dist_wait: return "input dist wait";
    case Op::prepare: return "lookup inputs";
    case Op::lookup: return "embedding lookup";
    case Op::dense_forward: return "dense forward";
    case Op::backward: return "backward";
    case Op::emb_update: return "embedding update";
    case Op::optimizer: return "optimizer";
  }
  return "?";
}

std::vector<std::string> hosts_of(Op op) {
  switch (op) {
    case Op::parse: return {"H2D"};
    case Op::dist_start: return {"InputDistStart", "Forward"};
    case Op::dist_wait: return {"InputDistWait", "Forward"};
    case Op::prepare: return {"EmbPrefetch", "EmbLookup", "Forward"};
    case Op::lookup: return {"EmbLookup", "Forward"};
    case Op::dense_forward: return {"Forward"};
    case Op::backward: return {"Backward"};
    case Op::emb_update: return {"EmbBackward", "Backward"};
    case Op::optimizer: return {"OptimizerStep"};
  }
  return {};
}

std::map<std::string, std::vector<Op>> assign_ops(const swp::PipelinePlan& plan,
                                                  const std::string& preset) {
  std::set<std::string> names;
  for (const auto& t : plan.tasks) names.insert(t.task.name);
  std::map<std::string, std::vector<Op>> out;
  for (const auto& n : names) out[n];
  for (Op op : all_ops) {
    const auto hosts = hosts_of(op);
    const auto it = std::find_if(hosts.begin(), hosts.end(),
                                 [&](const std::string& h) { return names.count(h) != 0; });
    if (it == hosts.end())
      throw std::invalid_argument("--preset " + preset + ": the DLRM step's " + op_name(op) +
                                  " needs one of the tasks " + hosts.front() +
                                  (hosts.size() > 1 ? ", ..." : "") + ", which the preset lacks");
    out[*it].push_back(op);
  }
  return out;
}

}  // namespace dlrm
