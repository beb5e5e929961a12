#pragma once
// FastPaths: the engines' shortcuts, each of which can be switched off.

#include <string>
#include <string_view>

namespace swp {

/// The shortcuts both engines take where a plan and a scheduler allow them. Without any of
/// them an engine runs every plan on its reference path: join counters, each ready instance
/// released to its lane, the lane posting it to its scheduler. A shortcut runs the same
/// instances under the same dependencies, in the same lane order, with the same results,
/// errors and retirements, and with fewer hand-offs: switching one off changes speed, never
/// behaviour (tests/engine/test_fast_paths.cpp checks each against the reference path on
/// random plans, both engines, every drive form, host and sim). What a TaskObserver sees of
/// an instance's waits may differ, as it does between schedulers (TaskObserver::task_waiting:
/// an instance under a lane claim holds its lane from its release).
///
/// The shortcuts below lane_claims run tasks alone on their lane, which lane_claims releases,
/// so without it they do not apply; the one exception is data-flow's in_place, which also
/// runs, on the one thread, what an admission posted to the lanes. With workers, lane_claims
/// applies: what becomes ready is posted, and idle workers take it (running it on the driving
/// thread while offering it to them won on empty tasks and ~6% beside a busy core, not enough
/// for a second way to run every task, so it was removed; docs/release.md, "With workers") —
/// except that the caller runs the tasks uncounted, as with one thread, while the workers take
/// next to none of tasks too short to be worth moving (see uncounted).
///
/// All are on by default. A Runtime whose RuntimeOptions::fast_paths is unset takes them from
/// the SWP_FAST_PATHS environment variable (see from_environment), so a whole program or test
/// suite can run on the reference path without a change: `SWP_FAST_PATHS=none ./app`.
///
/// Example (a runtime on the reference path, for a comparison or a bisection):
/// ```
/// swp::Runtime rt({.workers = 2, .fast_paths = swp::FastPaths::none()});
/// ```
struct FastPaths {
  /// A task alone on its lane is released straight to its lane's scheduler, without a pass
  /// through the lane's queue (detail::LaneClaim; revoked when another user of the lane
  /// appears).
  bool lane_claims = true;
  /// One thread (a pool without workers, driven by the caller): an instance made ready by a
  /// release or a finish runs on that thread at once, instead of being posted and run by the
  /// caller's next drive (the clock: a task alone on its lane; data-flow: also what an
  /// admission posts, as the admission ends).
  bool in_place = true;
  /// Every task alone on its lane, and one thread to run them (as for in_place, which it
  /// needs): data-flow runs a whole admitted iteration, the clock a whole period, in serial
  /// order without counting down join counters; anything unusual (a body that suspends or
  /// throws, device work, an observer) hands the rest over to the counted path. Both engines
  /// also do so with workers, on the thread in progress(), after a millisecond or more in
  /// which the tasks took under 250 ns each (what moving one to another thread costs) and the
  /// workers carried at most one iteration in 16, for 32 times as many iterations (the clock
  /// first lets the iterations in flight retire); then they offer them the work again
  /// (docs/release.md, "The alone window").
  bool uncounted = true;

  /// Every shortcut on (the default).
  static constexpr FastPaths all() noexcept { return {}; }
  /// The reference path.
  static constexpr FastPaths none() noexcept { return {false, false, false}; }

  /// Parses `spec`: "all", "none", or a comma-separated list of the shortcuts to keep on
  /// (by their member names, e.g. "lane_claims,in_place"; the others are off). Throws
  /// std::invalid_argument naming the unknown word and listing the valid ones.
  static FastPaths parse(std::string_view spec);
  /// SWP_FAST_PATHS parsed (unset or empty: all()). Throws std::invalid_argument naming the
  /// variable when it does not parse.
  static FastPaths from_environment();

  bool operator==(const FastPaths&) const = default;
};

/// "all", "none", or the list of those on, as parse() reads it.
std::string to_string(const FastPaths& paths);

}  // namespace swp
