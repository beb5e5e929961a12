#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "swp/sim/pp_simulator.hpp"

namespace test_pp_simulator {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("sim");

namespace {

using swp::PpAction;
using swp::PpPass;
using Kind = PpAction::Kind;

PpAction compute(PpPass pass, int mb) { return {Kind::compute, pass, mb, 0, -1}; }
PpAction send(PpPass pass, int mb, int peer) { return {Kind::send, pass, mb, 0, peer}; }
PpAction recv(PpPass pass, int mb, int peer) { return {Kind::recv, pass, mb, 0, peer}; }

swp::PpSchedule by_hand(std::vector<std::vector<PpAction>> programs, int microbatches = 1) {
  const int ranks = static_cast<int>(programs.size());
  return swp::PpSchedule{"by hand", ranks, 1, microbatches, true, std::move(programs)};
}

}  // namespace

TEST_CASE("gpipe and 1f1b: latency (m + p - 1)(f + b), bubble (p - 1)/(m + p - 1)") {
  for (auto kind : {swp::PpScheduleKind::gpipe, swp::PpScheduleKind::one_f_one_b})
    for (int p : {1, 2, 4, 7})
      for (int m : {1, 3, 8, 16})
        for (auto costs : {std::pair{1.0, 2.0}, std::pair{5.0, 5.0}, std::pair{3.0, 0.0}}) {
          const double f = costs.first, b = costs.second;  // clang 14 cannot CAPTURE a binding
          CAPTURE(swp::schedule_name(kind));
          CAPTURE(p);
          CAPTURE(m);
          CAPTURE(f);
          CAPTURE(b);
          const auto r = swp::simulate_pp(swp::make_pp_schedule(kind, p, m), {{f}, {b}, 0});
          CHECK(r.latency_us() == doctest::Approx((m + p - 1) * (f + b)));
          CHECK(r.bubble_fraction() == doctest::Approx(double(p - 1) / (m + p - 1)));
        }
}

TEST_CASE("interleaved: latency m(f + b) + (p - 1)(f + b)/v, bubble (p - 1)/(v m + p - 1)") {
  for (int p : {2, 4, 8})
    for (int v : {2, 3, 4})
      for (int groups : {1, 2, 4}) {
        const int m = groups * p;
        const double f = 12, b = 24;  // divisible by every v: exact in nanoseconds
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        const auto r = swp::simulate_pp(
            swp::make_pp_schedule(swp::PpScheduleKind::interleaved, p, m, v), {{f}, {b}, 0});
        CHECK(r.latency_us() == doctest::Approx(m * (f + b) + (p - 1) * (f + b) / v));
        CHECK(r.bubble_fraction() == doctest::Approx(double(p - 1) / (v * m + p - 1)));
      }
}

TEST_CASE("the timeline holds every compute and transfer, on its rank or link") {
  const auto s = swp::make_pp_schedule(swp::PpScheduleKind::one_f_one_b, 3, 4);
  const auto r = swp::simulate_pp(s, {{2}, {4}, 1});
  // 3 ranks x 4 microbatches x 2 passes, and 2 links each way x 4 microbatches.
  CHECK(r.work_items == 24 + 16);
  CHECK(r.slices.size() == r.work_items);
  REQUIRE(r.tracks.size() == 3 + 4);
  CHECK(r.tracks[0].name == "stage 0");
  CHECK(r.tracks[3].name == "link 0->1");
  for (const auto& slice : r.slices) {
    const auto& track = r.tracks[slice.track];
    CHECK(slice.transfer == (track.rank < 0));
    CHECK(slice.end - slice.start == std::chrono::microseconds(slice.transfer ? 1
                                                               : slice.pass == PpPass::forward
                                                                   ? 2
                                                                   : 4));
  }
  // Busy time is what the ranks computed; comm on the links is not rank time.
  for (auto busy : r.busy) CHECK(busy == std::chrono::microseconds(4 * 6));
  // Each hop of the first microbatch adds its transfer: F0 leaves rank 2 at 3·2 + 2·1.
  bool found = false;
  for (const auto& slice : r.slices)
    if (slice.track == 2 && !slice.transfer && slice.pass == PpPass::forward &&
        slice.microbatch == 0) {
      CHECK(slice.start == std::chrono::microseconds(2 * 2 + 2 * 1));
      found = true;
    }
  CHECK(found);
  CHECK(r.bubble_fraction() > double(2) / 6);  // more than without comm
}

TEST_CASE("comm between stages adds 2(p - 1) transfers to the critical path of gpipe") {
  const int p = 4, m = 8;
  const double f = 10, b = 20, c = 3;
  const auto r =
      swp::simulate_pp(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, p, m), {{f}, {b}, c});
  // Forward wave: (m + p - 1) f + (p - 1) c; backward the same with b.
  CHECK(r.latency_us() == doctest::Approx((m + p - 1) * (f + b) + 2 * (p - 1) * c));
}

TEST_CASE("forward only: the seed's flow shop, transfers overlapping compute") {
  for (auto kind : {swp::PpScheduleKind::gpipe, swp::PpScheduleKind::one_f_one_b}) {
    CAPTURE(swp::schedule_name(kind));
    const auto r = swp::simulate_pp(swp::make_pp_schedule(kind, 4, 8, 1, true), {{10}, {0}, 3});
    CHECK(r.work_items == 4 * 8 + 3 * 8);  // no backward, no gradients
    // (m + p - 1) f, plus one transfer per hop of the last microbatch's path.
    CHECK(r.latency_us() == doctest::Approx(11 * 10 + 3 * 3));
  }
  const auto inter = swp::make_pp_schedule(swp::PpScheduleKind::interleaved, 4, 8, 2, true);
  CHECK(swp::simulate_pp(inter, {{10}, {0}, 0}).latency_us() == doctest::Approx(8 * 10 + 3 * 5));
  // With comm, a group of 4 microbatches comes round to rank 0's second chunk before its
  // first one is back (4 · 5 us of work < 4 · 5 + 4 · 3 of path): comm is exposed at every
  // wrap, not only on the fill path.
  CHECK(swp::simulate_pp(inter, {{10}, {0}, 3}).latency_us() == doctest::Approx(128));
  swp::PpSchedule s{
      "by hand", 1, 1, 1, false, {{compute(PpPass::forward, 0), compute(PpPass::backward, 0)}}};
  CHECK_THROWS_WITH_AS(swp::simulate_pp(s, {}),
                       "rank 0 at action 1 (B0): a backward in a forward-only schedule",
                       swp::PpScheduleError);
}

TEST_CASE("per-stage costs: the slowest stage sets the pace") {
  const auto r = swp::simulate_pp(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 3, 5),
                                  {{1, 4, 1}, {0}, 0});
  // Forward-only flow shop: Σ f + (m - 1) max f = 6 + 4 · 4.
  CHECK(r.latency_us() == doctest::Approx(22));
  CHECK_THROWS_AS(
      swp::simulate_pp(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 3, 5), {{1, 4}, {0}, 0}),
      std::invalid_argument);
  CHECK_THROWS_AS(
      swp::simulate_pp(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 3, 5), {{1}, {-1}, 0}),
      std::invalid_argument);
}

TEST_CASE("where the fill-drain estimate and the event-level timeline part (docs/sim.md)") {
  using K = swp::PpScheduleKind;
  const auto latency = [](K kind, swp::PpCosts costs) {
    return swp::simulate_pp(swp::make_pp_schedule(kind, 4, 8), costs).latency_us();
  };
  // Stage times f + b = 30, 20, 20, 40: the estimate paces every microbatch at 40.
  const swp::PpCosts uneven{{20, 10, 10, 10}, {10, 10, 10, 30}, 0};
  const double estimate = 110 + 7 * 40;
  // GPipe's forward wave is paced by stage 0 (20), its backward wave by stage 3 (30).
  CHECK(latency(K::gpipe, uneven) == doctest::Approx(50 + 7 * 20 + 60 + 7 * 30));
  CHECK(latency(K::gpipe, uneven) > estimate);
  CHECK(latency(K::one_f_one_b, uneven) == doctest::Approx(estimate));
  // With comm the estimate charges every stage its transfers; the links overlap them.
  // Stage comm 3, 6, 6, 3 per pass, two passes: Σ stage = 120 + 36, slowest 30 + 12.
  const double with_comm = (4 * 30 + 2 * (3 + 6 + 6 + 3)) + 7 * (30 + 2 * 6);
  CHECK(latency(K::gpipe, {{10}, {20}, 3}) == doctest::Approx(348));
  CHECK(latency(K::gpipe, {{10}, {20}, 3}) < with_comm);
  CHECK(with_comm == doctest::Approx(450));
}

TEST_CASE("a send/recv order that cannot complete is reported with who waits on what") {
  // Each rank first waits for the other's backward: neither ever computes.
  const auto s = by_hand({
      {recv(PpPass::backward, 0, 1), compute(PpPass::forward, 0), send(PpPass::forward, 0, 1),
       compute(PpPass::backward, 0)},
      {recv(PpPass::forward, 0, 0), compute(PpPass::forward, 0), compute(PpPass::backward, 0),
       send(PpPass::backward, 0, 0)},
  });
  try {
    (void)swp::simulate_pp(s, {});
    FAIL("expected a deadlock");
  } catch (const swp::PpDeadlock& e) {
    REQUIRE(e.waits().size() == 2);
    CHECK(e.waits()[0].rank == 0);
    CHECK(e.waits()[0].action == 0);
    CHECK(e.waits()[0].at == "recv B0 from rank 1");
    CHECK(e.waits()[1].rank == 1);
    CHECK(e.waits()[1].at == "recv F0 from rank 0");
    CHECK(std::string(e.what()) ==
          "the pipeline schedule deadlocks: 2 rank(s) can never finish\n"
          "  rank 0 at action 0 (recv B0 from rank 1) waits for rank 1 to send it (0 of its "
          "messages to rank 0 taken); rank 1 at action 0 (recv F0 from rank 0) waits too\n"
          "  rank 1 at action 0 (recv F0 from rank 0) waits for rank 0 to send it (0 of its "
          "messages to rank 1 taken); rank 0 at action 0 (recv B0 from rank 1) waits too");
  }
}

TEST_CASE("send-before-recv on both sides: fine eagerly, a deadlock under rendezvous") {
  // Both ranks exchange a message: each sends, then receives.
  const auto s = by_hand({
      {compute(PpPass::forward, 0), send(PpPass::forward, 0, 1), recv(PpPass::forward, 0, 1),
       compute(PpPass::backward, 0)},
      {compute(PpPass::forward, 0), send(PpPass::forward, 0, 0), recv(PpPass::forward, 0, 0),
       compute(PpPass::backward, 0)},
  });
  const auto eager = swp::simulate_pp(s, {{1}, {1}, 1});
  CHECK(eager.latency_us() == doctest::Approx(3));
  try {
    (void)swp::simulate_pp(s, {{1}, {1}, 1}, {.send_mode = swp::PpSendMode::rendezvous});
    FAIL("expected a deadlock");
  } catch (const swp::PpDeadlock& e) {
    REQUIRE(e.waits().size() == 2);
    CHECK(e.waits()[0].at == "send F0 to rank 1");
    CHECK(e.waits()[0].waits_for.starts_with("rank 1 to reach the matching recv"));
  }
  SUBCASE("rendezvous makes the sender wait for the transfer") {
    const auto ok = by_hand({
        {compute(PpPass::forward, 0), send(PpPass::forward, 0, 1), compute(PpPass::backward, 0)},
        {recv(PpPass::forward, 0, 0), compute(PpPass::forward, 0), compute(PpPass::backward, 0)},
    });
    const auto r = swp::simulate_pp(ok, {{1}, {1}, 5}, {.send_mode = swp::PpSendMode::rendezvous});
    CHECK(r.latency_us() == doctest::Approx(1 + 5 + 1 + 1));
    // Rank 0's backward starts only when its send completed.
    for (const auto& slice : r.slices)
      if (slice.track == 0 && slice.pass == PpPass::backward)
        CHECK(slice.start == std::chrono::microseconds(6));
  }
}

TEST_CASE("under rendezvous sends gpipe completes, but 1f1b's plain send/recv order deadlocks") {
  const auto gpipe = swp::simulate_pp(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 4, 8),
                                      {{4}, {8}, 1}, {.send_mode = swp::PpSendMode::rendezvous});
  CHECK(gpipe.latency_us() >= 11 * 12);
  // In steady state rank 2 sends F1 to rank 3 while rank 3 sends B0 to rank 2: with blocking
  // sends neither reaches its recv (why Megatron-LM pairs them in one batched isend/irecv).
  try {
    (void)swp::simulate_pp(swp::make_pp_schedule(swp::PpScheduleKind::one_f_one_b, 4, 8),
                           {{4}, {8}, 1}, {.send_mode = swp::PpSendMode::rendezvous});
    FAIL("expected a deadlock");
  } catch (const swp::PpDeadlock& e) {
    REQUIRE(e.waits().size() == 4);
    CHECK(e.waits()[2].at == "send F1 to rank 3");
    CHECK(e.waits()[3].at == "send B0 to rank 2");
    CHECK(e.waits()[3].waits_for ==
          "rank 2 to reach the matching recv; rank 2 at action 5 (send F1 to rank 3) waits too");
  }
}

TEST_CASE("schedules that are wrong in themselves are named") {
  SUBCASE("a recv expecting another message than the one sent") {
    const auto s = by_hand(
        {{compute(PpPass::forward, 0), send(PpPass::forward, 0, 1), compute(PpPass::forward, 1),
          send(PpPass::forward, 1, 1), compute(PpPass::backward, 0), compute(PpPass::backward, 1)},
         {recv(PpPass::forward, 1, 0), compute(PpPass::forward, 1), recv(PpPass::forward, 0, 0),
          compute(PpPass::forward, 0), compute(PpPass::backward, 0), compute(PpPass::backward, 1)}},
        2);
    CHECK_THROWS_WITH_AS(swp::simulate_pp(s, {}),
                         "rank 1 at action 0 (recv F1 from rank 0) expects F1, but message 1 "
                         "rank 0 sends it is F0",
                         swp::PpScheduleError);
  }
  SUBCASE("a message nobody receives") {
    const auto s = by_hand(
        {{compute(PpPass::forward, 0), send(PpPass::forward, 0, 1), compute(PpPass::backward, 0)},
         {compute(PpPass::forward, 0), compute(PpPass::backward, 0)}});
    CHECK_THROWS_WITH_AS(swp::simulate_pp(s, {}),
                         "rank 0 sends 1 message(s) to rank 1 that rank 1 never receives (the "
                         "first: F0)",
                         swp::PpScheduleError);
  }
  SUBCASE("a backward before its forward, a pass twice, a pass missing, a bad peer") {
    CHECK_THROWS_WITH_AS(
        swp::simulate_pp(by_hand({{compute(PpPass::backward, 0), compute(PpPass::forward, 0)}}),
                         {}),
        "rank 0 at action 0 (B0): the backward comes before its forward", swp::PpScheduleError);
    CHECK_THROWS_WITH_AS(
        swp::simulate_pp(by_hand({{compute(PpPass::forward, 0), compute(PpPass::forward, 0)}}), {}),
        "rank 0 at action 1 (F0): computed twice", swp::PpScheduleError);
    CHECK_THROWS_WITH_AS(swp::simulate_pp(by_hand({{compute(PpPass::forward, 0)}}), {}),
                         "rank 0 never computes B0", swp::PpScheduleError);
    CHECK_THROWS_AS(swp::simulate_pp(by_hand({{send(PpPass::forward, 0, 0)}}), {}),
                    swp::PpScheduleError);
  }
}

TEST_CASE("a schedule's ranks, chunks and microbatches out of range are named before any use") {
  // chunks 0 divided the costs by zero and -1 sized arrays from a negative before any check.
  const auto refused = [](int ranks, int chunks, int microbatches, const std::string& field) {
    CAPTURE(field);
    auto s = by_hand({{compute(PpPass::forward, 0), compute(PpPass::backward, 0)}});
    s.ranks = ranks;
    s.chunks = chunks;
    s.microbatches = microbatches;
    if (ranks < 1) s.programs.clear();
    CHECK_THROWS_WITH_AS(swp::simulate_pp(s, {.fwd_us = {10}, .bwd_us = {20}}),
                         doctest::Contains(field.c_str()), swp::PpScheduleError);
  };
  refused(1, 0, 1, "chunks 0");
  refused(1, -1, 1, "chunks -1");
  refused(1, 1, -1, "microbatches -1");
  refused(0, 1, 1, "ranks 0");
  refused(-2, 1, 1, "ranks -2");
}

TEST_CASE("long schedules keep their timeline: a rank's queued window and a link's backlog") {
  // 1000 microbatches: every rank stops at its window of queued computes again and again, and
  // in gpipe with transfers 10x a compute the links fall 990 transfers behind.
  SUBCASE("the closed form of gpipe and 1f1b") {
    for (auto kind : {swp::PpScheduleKind::gpipe, swp::PpScheduleKind::one_f_one_b}) {
      const auto r = swp::simulate_pp(swp::make_pp_schedule(kind, 4, 1000), {{1}, {2}, 0});
      CHECK(r.latency_us() == doctest::Approx((1000 + 4 - 1) * 3));
      CHECK(r.bubble_fraction() == doctest::Approx(3.0 / 1003));
    }
  }
  SUBCASE("eager sends pile up on the link: forwards arrive every 10 us, gradients alike") {
    const auto r = swp::simulate_pp(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 2, 1000),
                                    {{1}, {1}, 10});
    // Transfer i of the forwards ends at 11 + 10 i, so rank 1's last forward ends at 10002;
    // its backwards then end at 10003 + i and their transfers at 10013 + 10 i; rank 0's last
    // backward ends at 10014 + 9990.
    CHECK(r.latency_us() == doctest::Approx(20004));
    CHECK(r.work_items == 4 * 1000 + 2 * 1000);  // computes, transfers
  }
  SUBCASE("rendezvous sends wait for their delivery") {
    const auto r = swp::simulate_pp(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 2, 1000),
                                    {{1}, {1}, 10}, {.send_mode = swp::PpSendMode::rendezvous});
    // Every send holds its rank for the transfer: 11 us per microbatch and pass.
    CHECK(r.latency_us() == doctest::Approx(11013 + 11 * 999));
  }
}

TEST_CASE("a schedule longer than the simulated clock can time is refused, numbers compact") {
  const auto s = swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 2, 100000);
  // 4e17 us one after another: the nanosecond clock overflowed (latency 9.2e15 us, bubble 1.3).
  CHECK_THROWS_WITH_AS(swp::simulate_pp(s, {{1e12}, {1e12}, 0}),
                       "the schedule's work adds up to 4e+17 us one item after another, more "
                       "than the 1e+15 us a simulation may span",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::simulate_pp(s, {{1e300}, {1}, 0}),
                       "the forward time of stage 0 (1e+300 us) must be finite and in 0..1e12",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::simulate_pp(s, {{1}, {1}, 1e300}),
                       "the comm time (1e+300 us) must be finite and in 0..1e12",
                       std::invalid_argument);
}

TEST_CASE("the simulation is deterministic") {
  const auto s = swp::make_pp_schedule(swp::PpScheduleKind::interleaved, 4, 8, 2);
  const auto a = swp::simulate_pp(s, {{3, 5, 4, 3}, {6}, 0.5});
  const auto b = swp::simulate_pp(s, {{3, 5, 4, 3}, {6}, 0.5});
  CHECK(a.latency == b.latency);
  REQUIRE(a.slices.size() == b.slices.size());
  for (std::size_t i = 0; i < a.slices.size(); ++i) {
    CHECK(a.slices[i].start == b.slices[i].start);
    CHECK(a.slices[i].track == b.slices[i].track);
  }
  const auto totals = swp::simulate_pp(s, {{3, 5, 4, 3}, {6}, 0.5}, {.keep_timeline = false});
  CHECK(totals.slices.empty());
  CHECK(totals.latency == a.latency);
}

}  // namespace test_pp_simulator
