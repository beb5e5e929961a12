#pragma once
// The pieces ("ops") of the DLRM training step, and which task of a preset runs each: an op
// runs in the first task of its list that the preset has, so one set of bodies serves every
// preset (without InputDistStart, as in base, Forward distributes its own input; without
// EmbLookup, Forward looks up; and so on). No torch here.

#include <array>
#include <map>
#include <string>
#include <vector>

#include "swp/core/pipeline_plan.hpp"

namespace dlrm {

enum class Op { parse, dist_start, dist_wait, prepare, lookup, dense_forward, backward, emb_update,
                optimizer };
inline constexpr std::array all_ops{Op::parse,         Op::dist_start, Op::dist_wait,
                                    Op::prepare,       Op::lookup,     Op::dense_forward,
                                    Op::backward,      Op::emb_update, Op::optimizer};

/// The op's name, as errors say it ("embedding lookup").
const char* op_name(Op op);

/// The tasks an op may run in, first choice first.
std::vector<std::string> hosts_of(Op op);

/// Which ops each task of `plan` runs, in op order; throws naming the preset and the op that
/// has no task there.
std::map<std::string, std::vector<Op>> assign_ops(const swp::PipelinePlan& plan,
                                                  const std::string& preset);

}  // namespace dlrm
