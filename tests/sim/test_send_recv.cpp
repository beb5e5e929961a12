#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "swp/sim/send_recv.hpp"

namespace test_send_recv {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("sim");

TEST_CASE("a message is tokens x hidden x dtype bytes") {
  CHECK(swp::hidden_states_message_bytes(2048, 5120, 2) == 20'971'520);
  CHECK(swp::hidden_states_message_bytes(0, 5120, 2) == 0);
  CHECK_THROWS_WITH_AS(swp::hidden_states_message_bytes(-1, 8, 2), "token count -1 is negative",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::hidden_states_message_bytes(8, -3, 2), "hidden size -3 is negative",
                       std::invalid_argument);
  CHECK_THROWS_AS(swp::hidden_states_message_bytes(INT64_MAX / 2, 4, 2), std::overflow_error);
}

TEST_CASE("one way is latency plus bytes over bandwidth") {
  const swp::LinkModel link{.latency_us = 5, .bandwidth_gbps = 100};
  // 20'971'520 B / 100e9 B/s = 209.7152 us
  CHECK(link.one_way_us(20'971'520) == doctest::Approx(5 + 209.7152));
  CHECK(link.one_way_us(0) == 5);
  CHECK_THROWS_AS((void)(swp::LinkModel{.latency_us = 1, .bandwidth_gbps = 0}.one_way_us(1)),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)(swp::LinkModel{.latency_us = -1, .bandwidth_gbps = 1}.one_way_us(1)),
                  std::invalid_argument);
}

TEST_CASE("the first stage pays outgoing, middle stages both, the last incoming") {
  const swp::LinkModel link{.latency_us = 2, .bandwidth_gbps = 1};  // 1000 B per us
  // one way: 2 + 3000 / 1000 = 5 us
  CHECK(swp::stage_comm_us(4, 3000, link) == std::vector<double>{5, 10, 10, 5});
  CHECK(swp::stage_comm_us(2, 3000, link) == std::vector<double>{5, 5});
  SUBCASE("no communication with one stage or an empty message") {
    CHECK(swp::stage_comm_us(1, 3000, link) == std::vector<double>{0});
    CHECK(swp::stage_comm_us(3, 0, link) == std::vector<double>{0, 0, 0});
  }
}

TEST_CASE("send/recv events sit at the stage boundaries") {
  const swp::LinkModel link{.latency_us = 1, .bandwidth_gbps = 1};
  const auto events = swp::send_recv_events(3, 1000, link);
  REQUIRE(events.size() == 2);
  CHECK(events[0] == swp::SendRecvEvent{0, 1, 1000, 2.0});
  CHECK(events[1] == swp::SendRecvEvent{1, 2, 1000, 2.0});
  CHECK(swp::send_recv_events(1, 1000, link).empty());
  CHECK_THROWS_AS(swp::send_recv_events(0, 1000, link), std::invalid_argument);
}

}  // namespace test_send_recv
