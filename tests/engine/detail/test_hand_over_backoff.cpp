#include <doctest/doctest.h>

#include "swp/engine/detail/hand_over_backoff.hpp"

namespace test_hand_over_backoff {  // each test file's names apart (unity builds)

using swp::detail::HandOverBackoff;

namespace {

// How many chances in a row it refuses from now on.
unsigned refused(HandOverBackoff& backoff) {
  unsigned n = 0;
  while (!backoff.allows()) ++n;
  return n;
}

}  // namespace

TEST_CASE("a hand-over keeps in-place work off for a while, longer while they come in a row") {
  HandOverBackoff backoff;
  CHECK(backoff.allows());  // nothing handed over yet
  backoff.ran(true);
  CHECK(backoff.allows());
  backoff.ran(false);
  CHECK(refused(backoff) == HandOverBackoff::min_skip);
  backoff.ran(false);  // right after: twice as long
  CHECK(refused(backoff) == 2 * HandOverBackoff::min_skip);
  for (int k = 0; k < 20; ++k) backoff.ran(false);
  CHECK(refused(backoff) == HandOverBackoff::max_skip);
}

TEST_CASE("runs that went whole shorten the next backoff; defer and reset") {
  HandOverBackoff backoff;
  backoff.ran(false);
  backoff.ran(false);
  CHECK(refused(backoff) == 2 * HandOverBackoff::min_skip);
  for (int k = 0; k < 40; ++k) backoff.ran(true);  // an eighth less each
  backoff.ran(false);
  CHECK(refused(backoff) == HandOverBackoff::min_skip);  // never below the minimum
  backoff.defer();
  CHECK(refused(backoff) == HandOverBackoff::min_skip);
  backoff.ran(false);
  backoff.reset();
  CHECK(backoff.allows());
}

}  // namespace test_hand_over_backoff
