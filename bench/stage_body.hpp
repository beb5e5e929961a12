#pragma once
// The one task body every system of `swp-bench dispatch` runs in every stage, and the work it
// does: a fixed count of dependent integer steps, calibrated once against the steady clock.

#include <cstdint>

namespace swp_bench {

/// Runs `steps` dependent multiply-add steps (about 1.6 ns each on the CI machine kind) and
/// returns. With 0 steps it is an empty call. Never inlined, so that every system pays the
/// same call per stage, and the compiler can neither drop nor merge the work.
///
/// Why a count and not "spin until the clock says X µs": a thread that loses its core in the
/// middle of a clock-bounded spin finishes its "work" without doing it, which flatters exactly
/// the runs beside a co-runner. A count is the same real work however it is scheduled.
[[gnu::noinline]] void stage_body(std::uint64_t steps) noexcept;

/// The steps of stage_body() that take one microsecond on this thread now: the fastest of
/// several timed runs (a run that lost its core is slower, never faster). Call it before a
/// co-runner starts.
double calibrate_steps_per_us();

}  // namespace swp_bench
