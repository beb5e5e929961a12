#pragma once
// `swp-bench pp`: the event-level pipeline-parallel simulator at scale.

namespace swp_bench {

/// Simulates GPipe, 1F1B and interleaved 1F1B (2 chunks) with `stages` ranks and
/// `microbatches` microbatches (f 10 us, b 20 us, comm 1 us, eager sends, totals only) and
/// prints per schedule `pp_<schedule>_sim_ms` (the fastest of `rounds` runs, wall time),
/// `pp_<schedule>_work_items` and `pp_<schedule>_ns_per_item`, plus the simulated
/// `pp_<schedule>_latency_us` and `pp_<schedule>_bubble_fraction` (fixed by the model: a
/// check that the run did the work).
void run_pp_sim(int stages, int microbatches, int rounds);

}  // namespace swp_bench
