#include "swp/sim/pp_schedule.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace swp {

namespace {

// Appends the recv of a compute's input, the compute, and the send of its output, for
// virtual stage `vs` of `vstages` (chunk c of rank r is virtual stage c · ranks + r).
struct ProgramBuilder {
  int ranks;
  int chunks;
  std::vector<PpAction>& out;

  void run(int rank, PpPass pass, int microbatch, int chunk) {
    const int vstages = ranks * chunks;
    const int vs = chunk * ranks + rank;
    const bool fwd = pass == PpPass::forward;
    const int from = fwd ? vs - 1 : vs + 1;  // where the input comes from
    const int to = fwd ? vs + 1 : vs - 1;    // where the output goes
    if (from >= 0 && from < vstages && from % ranks != rank)
      out.push_back(PpAction{PpAction::Kind::recv, pass, microbatch, from / ranks, from % ranks});
    out.push_back(PpAction{PpAction::Kind::compute, pass, microbatch, chunk, -1});
    if (to >= 0 && to < vstages && to % ranks != rank)
      out.push_back(PpAction{PpAction::Kind::send, pass, microbatch, chunk, to % ranks});
  }
};

void check_at_least_1(const char* what, int value) {
  if (value < 1)
    throw std::invalid_argument(std::string(what) + " " + std::to_string(value) +
                                " must be at least 1");
}

}  // namespace

std::string describe(const PpAction& a, int chunks) {
  std::string op(1, a.pass == PpPass::forward ? 'F' : 'B');
  op += std::to_string(a.microbatch);
  if (chunks > 1) {
    op += ".c";
    op += std::to_string(a.chunk);
  }
  switch (a.kind) {
    case PpAction::Kind::compute:
      return op;
    case PpAction::Kind::send:
      return "send " + op + " to rank " + std::to_string(a.peer);
    case PpAction::Kind::recv:
      return "recv " + op + " from rank " + std::to_string(a.peer);
  }
  return op;
}

std::string_view schedule_name(PpScheduleKind kind) noexcept {
  switch (kind) {
    case PpScheduleKind::gpipe:
      return "gpipe";
    case PpScheduleKind::one_f_one_b:
      return "1f1b";
    case PpScheduleKind::interleaved:
      return "interleaved";
  }
  return "?";
}

PpScheduleKind parse_schedule_kind(std::string_view name) {
  for (auto k : {PpScheduleKind::gpipe, PpScheduleKind::one_f_one_b, PpScheduleKind::interleaved})
    if (schedule_name(k) == name) return k;
  throw std::invalid_argument("unknown schedule '" + std::string(name) +
                              "'; the schedules are gpipe, 1f1b, interleaved");
}

std::size_t PpSchedule::actions() const noexcept {
  std::size_t n = 0;
  for (const auto& p : programs) n += p.size();
  return n;
}

PpSchedule make_pp_schedule(PpScheduleKind kind, int ranks, int microbatches, int chunks,
                            bool forward_only) {
  check_at_least_1("stage count", ranks);
  check_at_least_1("microbatch count", microbatches);
  check_at_least_1("chunk count", chunks);
  if (kind != PpScheduleKind::interleaved && chunks != 1)
    throw std::invalid_argument("the " + std::string(schedule_name(kind)) +
                                " schedule has one chunk per stage, not " + std::to_string(chunks) +
                                " (chunks are for interleaved)");
  if (kind == PpScheduleKind::interleaved && microbatches % ranks != 0)
    throw std::invalid_argument(
        "the interleaved schedule needs the microbatch count (" + std::to_string(microbatches) +
        ") to be a multiple of the stage count (" + std::to_string(ranks) + ")");
  // Each compute brings at most a send and a recv: 3 · 2 · m · v actions per rank.
  const auto per_rank = 6 * static_cast<std::int64_t>(microbatches) * chunks;
  if (per_rank * ranks > (std::int64_t{1} << 31))
    throw std::invalid_argument("a schedule of " + std::to_string(ranks) + " stages, " +
                                std::to_string(microbatches) + " microbatches and " +
                                std::to_string(chunks) + " chunks is too large to simulate");
  PpSchedule s{std::string(schedule_name(kind)), ranks, chunks, microbatches, !forward_only, {}};
  s.programs.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    auto& program = s.programs[static_cast<std::size_t>(r)];
    program.reserve(static_cast<std::size_t>(per_rank));
    ProgramBuilder b{ranks, chunks, program};
    if (forward_only) {
      // Every forward is warm-up: microbatch order, chunk by chunk in groups of `ranks`.
      for (int k = 0; k < microbatches * chunks; ++k) {
        const int group = ranks * chunks;
        b.run(r, PpPass::forward, (k / group) * ranks + k % ranks, (k % group) / ranks);
      }
      continue;
    }
    switch (kind) {
      case PpScheduleKind::gpipe:
        for (int i = 0; i < microbatches; ++i) b.run(r, PpPass::forward, i, 0);
        for (int i = 0; i < microbatches; ++i) b.run(r, PpPass::backward, i, 0);
        break;
      case PpScheduleKind::one_f_one_b: {
        const int warmup = std::min(ranks - r - 1, microbatches);
        for (int i = 0; i < warmup; ++i) b.run(r, PpPass::forward, i, 0);
        for (int i = 0; i < microbatches - warmup; ++i) {
          b.run(r, PpPass::forward, warmup + i, 0);
          b.run(r, PpPass::backward, i, 0);
        }
        for (int i = microbatches - warmup; i < microbatches; ++i) b.run(r, PpPass::backward, i, 0);
        break;
      }
      case PpScheduleKind::interleaved: {
        // Megatron-LM's order over the m · v (microbatch, chunk) pairs of a rank: groups of
        // `ranks` microbatches walk the chunks; backwards walk them in reverse.
        const int total = microbatches * chunks;
        const int group = ranks * chunks;
        const auto microbatch_of = [&](int k) { return (k / group) * ranks + k % ranks; };
        const auto chunk_of = [&](int k, bool forward) {
          const int c = (k % group) / ranks;
          return forward ? c : chunks - 1 - c;
        };
        int warmup = microbatches == ranks ? total : (ranks - r - 1) * 2 + (chunks - 1) * ranks;
        warmup = std::min(warmup, total);
        for (int k = 0; k < warmup; ++k)
          b.run(r, PpPass::forward, microbatch_of(k), chunk_of(k, true));
        for (int k = 0; k < total - warmup; ++k) {
          b.run(r, PpPass::forward, microbatch_of(k + warmup), chunk_of(k + warmup, true));
          b.run(r, PpPass::backward, microbatch_of(k), chunk_of(k, false));
        }
        for (int k = total - warmup; k < total; ++k)
          b.run(r, PpPass::backward, microbatch_of(k), chunk_of(k, false));
        break;
      }
    }
  }
  return s;
}

}  // namespace swp
