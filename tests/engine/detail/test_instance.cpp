#include "swp/engine/detail/instance.hpp"

#include <doctest/doctest.h>

#include <cstdint>

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

}  // namespace test_instance
