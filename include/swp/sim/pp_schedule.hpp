#pragma once
// PpSchedule: what each pipeline rank does, in order — compute forward/backward of a
// microbatch's model chunk, send activations or gradients to a neighbour, receive them —
// and the GPipe, 1F1B and interleaved 1F1B schedules as such programs.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swp {

/// Forward or backward pass of one microbatch through one model chunk.
enum class PpPass : std::uint8_t { forward, backward };

/// One step of a rank's program.
/// - compute: run `pass` of `microbatch` through the rank's model chunk `chunk`;
/// - send: hand the output of (`pass`, `microbatch`, `chunk`) to rank `peer`;
/// - recv: take from rank `peer` the message the peer sent for (`pass`, `microbatch`,
///   `chunk`) — the chunk index on the *sending* rank.
/// Messages between two ranks are matched in order (the k-th recv from a peer takes the
/// k-th message that peer sent here); a mismatch is an error naming both actions.
struct PpAction {
  enum class Kind : std::uint8_t { compute, send, recv };
  Kind kind = Kind::compute;
  PpPass pass = PpPass::forward;
  int microbatch = 0;
  int chunk = 0;
  int peer = -1;  ///< send and recv only
  friend bool operator==(const PpAction&, const PpAction&) = default;
};

/// "F3" / "B3" (chunk 0 of a one-chunk schedule), "F3.c1" otherwise; sends and recvs as
/// "send F3 to 2", "recv B3 from 4".
std::string describe(const PpAction& action, int chunks);

/// The schedules swp generates.
enum class PpScheduleKind : std::uint8_t { gpipe, one_f_one_b, interleaved };

/// "gpipe", "1f1b", "interleaved".
std::string_view schedule_name(PpScheduleKind kind) noexcept;
/// The kind named `name` (as schedule_name prints it); throws std::invalid_argument naming
/// it and the known names.
PpScheduleKind parse_schedule_kind(std::string_view name);

/// A pipeline schedule: `ranks` devices in a line, each holding `chunks` model chunks
/// (virtual stages: chunk c of rank r is virtual stage c · ranks + r, so a microbatch goes
/// round the ranks `chunks` times), `microbatches` microbatches, one program per rank.
struct PpSchedule {
  std::string name;
  int ranks = 1;
  int chunks = 1;
  int microbatches = 1;
  bool backward = true;                         ///< false: forward passes only (inference)
  std::vector<std::vector<PpAction>> programs;  ///< one per rank

  /// The number of actions over all ranks.
  [[nodiscard]] std::size_t actions() const noexcept;
};

/// Builds `kind` for `ranks` ranks and `microbatches` microbatches; `chunks` is the number of
/// model chunks per rank (interleaved only; the others take 1). Each compute of a virtual
/// stage after the first is preceded by a recv of its input, each compute before the last
/// followed by a send of its output (and the reverse for backward).
/// - gpipe: all forwards, then all backwards (in microbatch order).
/// - 1f1b: PipeDream-Flush: rank r runs min(ranks − r − 1, m) warm-up forwards, then
///   alternates one forward and one backward, then drains the backwards.
/// - interleaved: Megatron-LM's interleaved 1F1B: warm-up of (ranks − r − 1) · 2 +
///   (chunks − 1) · ranks forward chunks (everything when m = ranks), then 1F1B over chunks,
///   forwards walking chunks 0..v−1 and backwards v−1..0 in groups of `ranks` microbatches.
///   Requires microbatches to be a multiple of ranks (as Megatron-LM does).
/// With `forward_only` (inference) every schedule runs only the forwards, in its forward
/// order (gpipe and 1f1b: microbatch order; interleaved: Megatron-LM's forward-only walk
/// over the chunks), and no gradients travel.
/// Throws std::invalid_argument naming the value for ranks, microbatches or chunks < 1,
/// chunks != 1 for a non-interleaved schedule, or microbatches not a multiple of ranks for
/// interleaved, and when the schedule would exceed 2^31 actions.
///
/// Example: `auto s = swp::make_pp_schedule(swp::PpScheduleKind::interleaved, 4, 8, 2);`
/// then `swp::simulate_pp(s, costs)`.
PpSchedule make_pp_schedule(PpScheduleKind kind, int ranks, int microbatches, int chunks = 1,
                            bool forward_only = false);

}  // namespace swp
