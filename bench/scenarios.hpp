#pragma once
// `swp-bench overlap` and `swp-bench jitter`: the 3-stage device-overlap scenario.

namespace swp_bench {

/// Runs the 3-stage plan (device 300/200/1000 us on three streams, 5 us CPU each) on sim and
/// host with both engines and prints `<prefix>_<engine>_<backend>_us_per_iter` and
/// `_efficiency`. With `jitter`, Load takes 3000 us every 10th iteration and data-flow runs
/// at max_depth 6.
void run_scenario(const char* prefix, bool jitter, int iters);

}  // namespace swp_bench
