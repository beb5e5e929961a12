#pragma once
// The period × task schedule table of the seeds (print_schedule / format_schedule).

#include <set>
#include <string>

#include "swp/core/plan_graph.hpp"

namespace swp {

/// Renders the first `periods` periods of the clock-driven schedule: one row per task in
/// stage-descending order (topological by name within a stage), columns
/// `#  Task  Thread  Stream | P0 P1 ...`, cell `iK` when the task processes iteration K in that
/// period (K = period − stage) and `--` before its first period. Tasks named in `shortcut` are
/// suffixed ` [skip]` and show `.` for every instance they skip. Columns are padded by display
/// width: wide and fullwidth characters (CJK, East_Asian_Width W/F) take two columns, combining
/// marks and zero-width characters none.
/// Throws std::invalid_argument when `periods` < 1.
///
/// Example (seed 000, TrainPipelineBase, `format_schedule(graph, 3)`):
/// ```
///    #  Task           Thread   Stream   | P0    P1    P2
///   --  -------------  -------  -------  + ----- ----- -----
///    0  ZeroGrad       default  default  |  --   i0    i1
///    ...
///    5  H2D            default  memcpy   | i0    i1    i2
/// ```
std::string format_schedule(const PlanGraph& graph, int periods,
                            const std::set<std::string>& shortcut = {});

}  // namespace swp
