// `swp pp simulate`: an event-level pipeline schedule on the sim backend, its latency and
// bubble, the fill-drain estimate of the same costs, and its timeline as trace/SVG files.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "pp_options.hpp"
#include "swp/sim/pp_estimate.hpp"
#include "swp/sim/pp_simulator.hpp"
#include "swp/sim/send_recv.hpp"
#include "trace_output.hpp"

namespace swp::cli {

namespace {

// What one command may ask for, so that any accepted input runs in 1 GB. A stage's forward and
// backward of a microbatch's chunk ("a compute" here) bring two computes and up to two
// transfers: ~4 work items, which the simulation holds in about 27 bytes each (the schedule's
// actions, mostly). 2^22 of them took 456 MB and 21 s (4096 stages x 1024 microbatches).
// A timeline (--trace, --svg) keeps every slice twice over (~170 bytes per work item) and
// writes ~120 (JSON) and ~190 (SVG) bytes per item: 2^20 took 740 MB and 3 minutes for 1.3 GB
// of files no viewer opens, so 2^18 (134 MB, ~10 s).
constexpr std::int64_t max_simulated_computes = std::int64_t{1} << 22;
constexpr std::int64_t max_timeline_computes = std::int64_t{1} << 18;

// Simulated time per microbatch on a stage, and per transfer: what the simulator accepts.
constexpr double max_pass_us = 1e12;

struct SimulateFlags {
  std::string schedule;
  int stages = 1;
  int microbatches = 1;
  int chunks = 0;  // 0: 2 for interleaved, 1 otherwise
  std::vector<double> fwd_us, bwd_us;
  double comm_us = 0;
  std::string send_mode = "eager";
  std::string trace_path, svg_path;
};

// The simulated timeline as a swp::Trace: a stream row per rank and per link, a device slice
// per compute ("F/3": forward of microbatch 3; "F.c1/3" for chunk 1) and transfer
// ("send F/3"), so the trace layer's writers draw it like any run.
Trace to_trace(const PpSimResult& r, int chunks) {
  Trace t;
  t.backend = "sim";
  const auto chunk_suffix = [&](int c) {
    return chunks > 1 ? ".c" + std::to_string(c) : std::string();
  };
  for (int transfer = 0; transfer < 2; ++transfer)
    for (int c = 0; c < chunks; ++c)
      for (const char* pass : {"F", "B"})
        t.tasks.push_back((transfer ? "send " : "") + std::string(pass) + chunk_suffix(c));
  for (const auto& track : r.tracks) t.tracks.push_back({TraceTrack::Kind::stream, track.name});
  t.slices.reserve(r.slices.size());
  for (const auto& s : r.slices) {
    if (s.end == s.start) continue;  // zero-cost work (a backward of 0 us) draws nothing
    const auto task = static_cast<TaskIndex>((s.transfer ? 2 * chunks : 0) + 2 * s.chunk +
                                             (s.pass == PpPass::backward ? 1 : 0));
    t.slices.push_back(TraceSlice{.kind = TraceSlice::Kind::device,
                                  .track = s.track,
                                  .task = task,
                                  .iter = s.microbatch,
                                  .start = s.start,
                                  .end = s.end});
  }
  std::sort(t.slices.begin(), t.slices.end(), [](const TraceSlice& a, const TraceSlice& b) {
    return a.track != b.track ? a.track < b.track : a.start < b.start;
  });
  return t;
}

// Every --bwd-us is 0: an inference run, forward passes only (no gradients travel).
bool forward_only(const SimulateFlags& f) {
  return std::all_of(f.bwd_us.begin(), f.bwd_us.end(), [](double b) { return b == 0; });
}

// The seed's fill-drain estimate of the same costs: stage compute f + b, and the seed's
// stage-boundary comm (incoming + outgoing) for each pass that moves data.
PipelineEstimate fill_drain(const SimulateFlags& f) {
  const auto at = [](const std::vector<double>& v, int s) {
    return v.size() == 1 ? v[0] : v[static_cast<std::size_t>(s)];
  };
  std::vector<double> compute;
  for (int s = 0; s < f.stages; ++s) compute.push_back(at(f.fwd_us, s) + at(f.bwd_us, s));
  // A one-byte message over an infinitely fast link: one way = --comm-us.
  auto comm = stage_comm_us(f.stages, f.comm_us > 0 ? 1 : 0, LinkModel{f.comm_us, 1e300});
  for (auto& c : comm) c *= forward_only(f) ? 1 : 2;
  return estimate_pipeline(compute, comm, f.microbatches);
}

int simulate(const SimulateFlags& f) {
  const auto kind = parse_schedule_kind(f.schedule);
  const int chunks = f.chunks > 0 ? f.chunks : (kind == PpScheduleKind::interleaved ? 2 : 1);
  for (const auto* v : {&f.fwd_us, &f.bwd_us})
    if (v->size() != 1 && v->size() != static_cast<std::size_t>(f.stages)) {
      print_error(std::string(v == &f.fwd_us ? "--fwd-us" : "--bwd-us") + " has " +
                  std::to_string(v->size()) + " values; give one, or one per stage (" +
                  std::to_string(f.stages) + ")");
      return Exit::bad_usage;
    }
  const bool timeline = !f.trace_path.empty() || !f.svg_path.empty();
  const auto computes = static_cast<std::int64_t>(f.stages) * f.microbatches * chunks;
  const auto limit = timeline ? max_timeline_computes : max_simulated_computes;
  if (computes > limit) {
    print_error(
        "swp pp simulate: --stages x --microbatches x --chunks = " + std::to_string(computes) +
        " is more than the " + std::to_string(limit) + " computes one run may simulate" +
        (timeline ? " with --trace or --svg" : "") + " (so that it fits in 1 GB of memory)");
    return Exit::bad_usage;
  }
  PpSchedule schedule;
  try {
    schedule = make_pp_schedule(kind, f.stages, f.microbatches, chunks, forward_only(f));
  } catch (const std::invalid_argument& e) {
    print_error(std::string("swp pp simulate: ") + e.what());
    return Exit::bad_usage;
  }
  TraceOutputs outputs;
  if (!outputs.open(f.trace_path, f.svg_path)) return Exit::bad_usage;
  const auto started = std::chrono::steady_clock::now();
  PpSimResult result;
  try {
    result =
        simulate_pp(schedule, PpCosts{f.fwd_us, f.bwd_us, f.comm_us},
                    PpSimOptions{.send_mode = f.send_mode == "rendezvous" ? PpSendMode::rendezvous
                                                                          : PpSendMode::eager,
                                 .keep_timeline = outputs.wanted()});
  } catch (const PpDeadlock& e) {
    print_error(e.what());
    return Exit::invalid_plan;
  } catch (const PpScheduleError& e) {  // a generated schedule is consistent: not expected
    print_error(e.what());
    return Exit::invalid_plan;
  } catch (const std::invalid_argument& e) {  // the times add up past the simulated clock
    print_error(std::string("swp pp simulate: ") + e.what() +
                "; lower --fwd-us, --bwd-us, --comm-us or --microbatches");
    return Exit::bad_usage;
  }
  const double sim_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const auto estimate = fill_drain(f);
  pp_metric("latency_us", result.latency_us(), "us");
  pp_metric("bubble_fraction", result.bubble_fraction(), "ratio");
  pp_metric("fill_drain_latency_us", estimate.latency_us, "us");
  pp_metric("work_items", static_cast<double>(result.work_items), "count");
  pp_metric("sim_ms", sim_ms, "ms");
  if (!outputs.wanted()) return Exit::ok;
  const std::string title = f.schedule + ": " + std::to_string(f.stages) + " stages, " +
                            std::to_string(f.microbatches) + " microbatches" +
                            (chunks > 1 ? ", " + std::to_string(chunks) + " chunks" : "") +
                            " (sim backend)";
  return outputs.write(to_trace(result, chunks), title) ? Exit::ok : Exit::bad_usage;
}

}  // namespace

void add_pp_simulate_command(CLI::App& pp, Action& action) {
  auto* cmd =
      pp.add_subcommand("simulate",
                        "run a GPipe, 1F1B or interleaved-1F1B schedule event by event on the sim "
                        "backend; latency and bubble from the simulated timeline");
  auto f = std::make_shared<SimulateFlags>();
  cmd->add_option("--schedule", f->schedule, "the schedule")
      ->required()
      ->check(CLI::IsMember({"gpipe", "1f1b", "interleaved"}));
  cmd->add_option("--stages", f->stages, "pipeline stages (ranks), p")
      ->required()
      ->check(in_range(1, 4096));
  cmd->add_option("--microbatches", f->microbatches, "microbatches, m")
      ->required()
      ->check(in_range(1, 1'000'000));
  cmd->add_option("--fwd-us", f->fwd_us,
                  "forward time of a microbatch on a stage (us): one value, or one per stage, "
                  "comma separated")
      ->required()
      ->delimiter(',')
      ->check(non_negative_number(max_pass_us));
  cmd->add_option("--bwd-us", f->bwd_us,
                  "backward time, like --fwd-us (all 0: forward passes only, no gradients sent)")
      ->required()
      ->delimiter(',')
      ->check(non_negative_number(max_pass_us));
  cmd->add_option("--chunks", f->chunks,
                  "model chunks per stage, v (interleaved; default 2), each taking 1/v of the "
                  "stage's time")
      ->check(in_range(1, 64));
  cmd->add_option("--comm-us", f->comm_us, "one transfer between stages (us)")
      ->check(non_negative_number(max_pass_us))
      ->capture_default_str();
  cmd->add_option("--send-mode", f->send_mode,
                  "eager: a send does not wait for the receiver; rendezvous: it blocks until "
                  "the matching recv took the message")
      ->check(CLI::IsMember({"eager", "rendezvous"}))
      ->capture_default_str();
  cmd->add_option("--trace", f->trace_path, "write the timeline as Chrome-trace JSON");
  cmd->add_option("--svg", f->svg_path, "write the timeline as an SVG picture");
  cmd->callback([&action, f] { action = [f] { return simulate(*f); }; });
}

}  // namespace swp::cli
