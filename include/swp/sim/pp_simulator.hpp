#pragma once
// simulate_pp: runs a PpSchedule event by event on the sim backend (virtual time) and reads
// the latency and the bubble off the simulated timeline; reports schedules that cannot
// complete instead of hanging.

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "swp/async/scheduler.hpp"
#include "swp/sim/pp_schedule.hpp"

namespace swp {

/// The costs of a simulated pipeline, in microseconds.
struct PpCosts {
  /// Forward / backward time of one microbatch through a rank's whole share of the model:
  /// one value for every rank, or one per rank. A rank holding v chunks spends fwd/v on
  /// each chunk (interleaving splits a rank's layers, it does not add any).
  std::vector<double> fwd_us{1.0};
  std::vector<double> bwd_us{2.0};
  /// One transfer between two ranks (activations forward, gradients backward).
  double comm_us = 0;
};

/// How a send behaves.
enum class PpSendMode : std::uint8_t {
  /// The sender hands the message to its link and goes on (an isend with a buffer): the
  /// transfer starts when the sender's earlier work is done and the link is free.
  eager,
  /// The sender blocks until the receiver has reached the matching recv and the transfer is
  /// over (a synchronous send, as NCCL's): orders that are fine eagerly can deadlock.
  rendezvous,
};

/// The longest timeline simulate_pp runs (1e15 us, about 31 years; the nanosecond clock holds
/// 292): a schedule whose work, one item after another, takes longer is refused.
inline constexpr double max_pp_sim_us = 1e15;

struct PpSimOptions {
  PpSendMode send_mode = PpSendMode::eager;
  bool keep_timeline = true;  ///< keep every slice in the result (false: only totals)
};

/// A row of the simulated timeline: a rank's compute stream, or the link carrying messages
/// from one rank to another.
struct PpTrack {
  std::string name;        ///< "stage 3" or "link 3->4"
  int rank = -1;           ///< the rank of a compute track, -1 for a link
  int from = -1, to = -1;  ///< a link's ends
};

/// One piece of simulated work: a compute (on its rank's track) or a transfer (on a link).
struct PpSlice {
  std::size_t track = 0;
  bool transfer = false;
  PpPass pass = PpPass::forward;
  int microbatch = 0;
  int chunk = 0;
  Clock::duration start{};
  Clock::duration end{};
};

/// What a simulation measured.
struct PpSimResult {
  Clock::duration latency{};          ///< the end of the last piece of work
  std::vector<Clock::duration> busy;  ///< compute time of each rank
  std::vector<PpTrack> tracks;        ///< ranks first, then the links in first use order
  std::vector<PpSlice> slices;        ///< in completion order (keep_timeline)
  std::size_t work_items = 0;         ///< computes and transfers the streams ran

  [[nodiscard]] double latency_us() const noexcept;
  /// Idle share of the ranks' time: 1 − Σ busy / (ranks · latency); 0 for an empty run.
  /// Waiting for a transfer counts as idle.
  [[nodiscard]] double bubble_fraction() const noexcept;
};

/// A schedule that is wrong in itself: a recv that takes a different message than the peer
/// sent at that point, messages never received, a rank that computes a pass twice, misses
/// one or runs a backward before its forward, a peer out of range, and, before anything else,
/// ranks or chunks below 1 or negative microbatches. what() names the ranks and actions (or
/// the field).
class PpScheduleError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A schedule whose send/recv order cannot complete. `waits` has one entry per rank that
/// could not finish: where it stopped and on what; what() lists them all.
class PpDeadlock : public std::runtime_error {
 public:
  struct Wait {
    int rank = 0;
    std::size_t action = 0;  ///< index into the rank's program
    std::string at;          ///< the action, as describe() prints it
    std::string waits_for;   ///< e.g. "rank 0 to send it (rank 0 waits at action 0: ...)"
  };
  explicit PpDeadlock(std::vector<Wait> waits);
  [[nodiscard]] const std::vector<Wait>& waits() const noexcept { return waits_; }

 private:
  std::vector<Wait> waits_;
};

/// Runs `schedule` with `costs` on a SimDevice: one stream per rank for its computes, one
/// per link for its transfers, stream events for every data dependency (a recv waits for its
/// transfer, a transfer for the sender's compute and, under rendezvous, for the receiver to
/// post the recv). Work is queued on the streams in dependency order — a rank whose next recv
/// (or rendezvous send) has no partner yet waits, and one with a window of computes queued
/// waits for them to run — while the SimScheduler runs the streams; once everything queued has
/// run and no rank can go on, a rank that has not finished is stuck: an order that cannot
/// complete is reported as PpDeadlock naming every stuck rank (the same ranks and actions
/// whatever the window: queuing order does not depend on time).
///
/// Completion: synchronous; returns once the last piece of work has ended in virtual time.
/// Deterministic: the same schedule and costs give the same timeline. Runs on the calling
/// thread, with no wall-clock waits and nothing to cancel (its work is bounded by the
/// schedule's size). Memory: a rank's program is queued on its stream a few computes ahead of
/// what has run, not all at once, so the streams hold a few hundred bytes per rank and link
/// whatever the schedule's length; the result holds one PpSlice (40 bytes) per work item with
/// keep_timeline. Throws PpScheduleError (see above), PpDeadlock, or std::invalid_argument for
/// costs that are negative, not finite, above 1e12 us or not one per rank, and for a schedule
/// whose work adds up to more than max_pp_sim_us.
///
/// Example:
/// ```
/// auto s = swp::make_pp_schedule(swp::PpScheduleKind::one_f_one_b, 4, 8);
/// auto r = swp::simulate_pp(s, {.fwd_us = {1}, .bwd_us = {2}});
/// r.latency_us();       // (8 + 4 − 1) · 3 = 33
/// r.bubble_fraction();  // 3 / 11
/// ```
PpSimResult simulate_pp(const PpSchedule& schedule, const PpCosts& costs,
                        const PpSimOptions& options = {});

}  // namespace swp
