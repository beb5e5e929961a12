#include "swp/engine/detail/instance.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>

namespace test_instance {  // each test file's names apart (unity builds)

using swp::detail::Instance;
using swp::detail::InstanceState;
using swp::detail::IterationSync;

TEST_CASE("an instance's state belongs to the iteration its entry holds") {
  IterationSync entry;
  entry.iter = 5;
  Instance in;
  in.sync = &entry;
  CHECK(in.state_in(5) == InstanceState::idle);

  for (const auto state : {InstanceState::queued, InstanceState::dependency, InstanceState::turn,
                           InstanceState::running, InstanceState::coroutine}) {
    in.set_state(state);
    CHECK(in.state_in(5) == state);
  }
  in.set_state(InstanceState::finished);
  CHECK(in.state_in(5) == InstanceState::finished);

  // The entry takes the next iteration it serves (5 + E): the instance is idle there until
  // its release, and still finished in 5.
  entry.iter = 9;
  CHECK(in.state_in(9) == InstanceState::idle);
  CHECK(in.state_in(5) == InstanceState::finished);
  CHECK(in.state_in(13) == InstanceState::idle);

  in.set_state(InstanceState::queued);
  CHECK(in.state_in(9) == InstanceState::queued);
  in.set_state(InstanceState::running);
  CHECK(in.state_in(9) == InstanceState::running);
  in.set_state(InstanceState::finished);
  CHECK(in.state_in(9) == InstanceState::finished);
  CHECK(in.state_in(5) == InstanceState::idle);  // finished is stamped: 9's, not 5's

  // A new run forgets every state.
  in.clear_state();
  CHECK(in.state_in(9) == InstanceState::idle);
  CHECK(in.state_in(0) == InstanceState::idle);
}

TEST_CASE("an instance holds its claimed lane from its release under the claim to its finish") {
  IterationSync entry;
  entry.iter = 0;
  Instance in;
  in.sync = &entry;
  CHECK_FALSE(in.holds_claimed_lane());
  in.set_state(InstanceState::queued);
  CHECK_FALSE(in.holds_claimed_lane());  // released through its lane, not under the claim
  in.bypassed.store(true);
  CHECK(in.holds_claimed_lane());
  in.set_state(InstanceState::running);
  CHECK(in.holds_claimed_lane());
  in.set_state(InstanceState::finished);
  CHECK_FALSE(in.holds_claimed_lane());
  // Whichever iteration: the next one's release under the claim holds it again.
  entry.iter = 3;
  in.set_state(InstanceState::queued);
  CHECK(in.holds_claimed_lane());
}

TEST_CASE("an instance waiting for a dependency says for which, in its iteration or the one before") {
  IterationSync entry;
  entry.iter = 7;
  Instance in;
  in.sync = &entry;
  CHECK_FALSE(in.waits_for().has_value());

  in.wait_for_dependency(3, 7);
  CHECK(in.state_in(7) == InstanceState::dependency);
  REQUIRE(in.waits_for().has_value());
  CHECK(in.waits_for()->first == 3);
  CHECK(in.waits_for()->second == 7);

  // The task index keeps every bit below the top one; the iteration before is the top bit.
  const swp::TaskIndex last = (swp::TaskIndex{1} << 31) - 1;
  in.wait_for_dependency(last, 6);
  CHECK(in.state_in(7) == InstanceState::dependency);
  CHECK(in.waits_for()->first == last);
  CHECK(in.waits_for()->second == 6);

  // Once it moved on, there is nothing to report (the word holds its new state).
  in.set_state(InstanceState::running);
  CHECK_FALSE(in.waits_for().has_value());
  in.set_state(InstanceState::finished);
  CHECK_FALSE(in.waits_for().has_value());
  CHECK(in.state_in(7) == InstanceState::finished);
  CHECK(in.state_in(8) == InstanceState::idle);
}

TEST_CASE("an instance's task, lane-edge successor and cold state follow from its entry") {
  static_assert(sizeof(Instance) == 64);
  constexpr std::size_t tasks = 5;
  IterationSync entries[2];
  for (int e = 0; e < 2; ++e) {
    entries[e].next = &entries[1 - e];
    entries[e].previous = &entries[1 - e];
    entries[e].instances = swp::detail::InstanceArray(tasks);
    entries[e].cold = std::make_unique<swp::detail::InstanceCold[]>(tasks);
  }
  swp::detail::TaskInfo infos[tasks];
  for (std::size_t t = 0; t < tasks; ++t) infos[t].task = static_cast<std::uint32_t>(t);
  for (int e = 0; e < 2; ++e) {
    for (std::size_t t = 0; t < tasks; ++t) {
      Instance& in = entries[e].instances.emplace();
      in.sync = &entries[e];
      in.info = &infos[t];
    }
  }
  for (int e = 0; e < 2; ++e) {
    for (std::size_t t = 0; t < tasks; ++t) {
      Instance& in = entries[e].instances[t];
      CHECK(in.task() == t);
      CHECK(&in.after() == &entries[1 - e].instances[t]);
      CHECK(&in.cold() == &entries[e].cold[t]);
      CHECK_FALSE(in.error());
      CHECK(in.turn() == 0);
    }
  }
  // Cold state is the instance's own: an error set on one is on no other.
  entries[1].instances[2].error() = std::make_exception_ptr(7);
  entries[1].instances[2].turn() = 11;
  for (int e = 0; e < 2; ++e) {
    for (std::size_t t = 0; t < tasks; ++t) {
      const bool that_one = e == 1 && t == 2;
      CHECK(static_cast<bool>(entries[e].instances[t].error()) == that_one);
      CHECK(entries[e].instances[t].turn() == (that_one ? 11U : 0U));
    }
  }
}

TEST_CASE("an entry's next admission forgets the event generations its iteration recorded") {
  // Tasks 1 and 3 of 5 recorded (the rest did not, and never wrote theirs): forgetting clears
  // exactly theirs, so each generation is nonzero only for a task that recorded in the
  // entry's current iteration.
  IterationSync entry;
  entry.generation.assign(5, 0);
  entry.recorded = std::make_unique<swp::TaskIndex[]>(5);
  entry.generation[3] = 7;
  entry.recorded[entry.recorded_count.fetch_add(1)] = 3;
  entry.generation[1] = 4;
  entry.recorded[entry.recorded_count.fetch_add(1)] = 1;
  REQUIRE(entry.device());
  entry.forget_recorded();
  CHECK_FALSE(entry.device());
  for (const std::uint64_t generation : entry.generation) CHECK(generation == 0);
  // Nothing recorded: nothing to clear, still none.
  entry.forget_recorded();
  CHECK_FALSE(entry.device());
}

}  // namespace test_instance
