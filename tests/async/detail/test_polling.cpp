#include "swp/async/detail/polling.hpp"

#include <doctest/doctest.h>

namespace test_polling {  // each test file's names apart (unity builds)

TEST_CASE("a poller's looks space out, doubling up to the longest interval") {
  using swp::detail::rounds_to_next_look;
  CHECK(rounds_to_next_look(0, 100) == 1);
  CHECK(rounds_to_next_look(1, 100) == 2);
  CHECK(rounds_to_next_look(5, 100) == 32);
  CHECK(rounds_to_next_look(7, 100) == 100);   // capped
  CHECK(rounds_to_next_look(40, 100) == 100);  // no shift past the word
  CHECK(swp::detail::back_off(3, 100) == 8);   // pauses as many rounds as it says
}

TEST_CASE("a polling round's length is measured once per process") {
  const double first = swp::detail::pause_round_ns();
  CHECK(first >= 1.0);
  CHECK(swp::detail::pause_round_ns() == first);
}

}  // namespace test_polling
