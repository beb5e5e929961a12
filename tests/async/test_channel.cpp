#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/started.hpp"
#include "swp/async/channel.hpp"
#include "swp/async/sync_wait.hpp"

namespace test_channel {  // each test file's names apart (unity builds)

namespace {

using swp::test::Started;

swp::Co<void> send_all(swp::Channel<int>& ch, std::vector<int> values) {
  for (int v : values) co_await ch.send(v);
}

swp::Co<void> receive_all(swp::Channel<int>& ch, std::vector<int>& out) {
  while (auto v = co_await ch.receive()) out.push_back(*v);
}

swp::Co<void> receive_one(swp::Channel<int>& ch, std::optional<int>& out) {
  out = co_await ch.receive();
}

}  // namespace

TEST_CASE("a channel keeps send order and refuses a try_send beyond its capacity") {
  swp::Channel<std::string> ch(2);
  CHECK(ch.capacity() == 2);
  std::string a = "a", b = "b", c = "c";
  CHECK(ch.try_send(a));
  CHECK(ch.try_send(b));
  CHECK_FALSE(ch.try_send(c));
  CHECK(c == "c");  // refused: left with the caller
  CHECK(ch.size() == 2);
  CHECK(ch.try_receive() == "a");
  CHECK(ch.try_send(c));
  CHECK(ch.try_receive() == "b");
  CHECK(ch.try_receive() == "c");
  CHECK_FALSE(ch.try_receive().has_value());
  CHECK_FALSE(ch.done());
}

TEST_CASE("a channel of capacity 0 is refused") {
  CHECK_THROWS_AS(swp::Channel<int>(0), std::invalid_argument);
}

TEST_CASE("a receive waits for the next send, which resumes it") {
  swp::Channel<int> ch(1);
  std::optional<int> got;
  Started receiver(receive_one(ch, got));
  CHECK_FALSE(receiver.finished);
  CHECK(ch.try_send(7));  // handed straight to the waiting receiver
  CHECK(receiver.finished);
  CHECK(got == 7);
  CHECK(ch.size() == 0);
}

TEST_CASE("a send waits while the channel is full and gets in, in order, as room frees") {
  swp::Channel<int> ch(2);
  Started sender(send_all(ch, {1, 2, 3, 4, 5}));
  CHECK_FALSE(sender.finished);  // 1 and 2 queued, 3 waits
  CHECK(ch.size() == 2);
  std::vector<int> got;
  while (got.size() < 5)
    if (auto v = ch.try_receive()) got.push_back(*v);
  CHECK(sender.finished);
  CHECK_FALSE(sender.error);
  CHECK(got == std::vector<int>{1, 2, 3, 4, 5});
}

TEST_CASE(
    "close lets receivers drain what is queued, then ends them; waiting senders are refused") {
  swp::Channel<int> ch(1);
  CHECK(ch.try_send(1));
  Started blocked(send_all(ch, {2}));
  CHECK_FALSE(blocked.finished);
  ch.close();
  CHECK(blocked.finished);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(blocked.error),
                       "swp::Channel: send on a closed channel", swp::ChannelClosed);
  CHECK_FALSE(ch.done());
  std::vector<int> got;
  Started receiver(receive_all(ch, got));
  CHECK(receiver.finished);
  CHECK(got == std::vector<int>{1});
  CHECK(ch.done());
  int late = 3;
  CHECK_FALSE(ch.try_send(late));
  CHECK_THROWS_AS(swp::sync_wait(send_all(ch, {4})), swp::ChannelClosed);
}

TEST_CASE("close ends a receiver already waiting on an empty channel") {
  swp::Channel<int> ch(4);
  std::optional<int> got = 99;
  Started receiver(receive_one(ch, got));
  CHECK_FALSE(receiver.finished);
  ch.close();
  CHECK(receiver.finished);
  CHECK_FALSE(got.has_value());
}

TEST_CASE("a cancelled receive takes nothing, and a cancelled send sends nothing") {
  swp::Channel<int> ch(1);
  swp::StopSignal stop;
  std::optional<int> got;
  Started receiver(receive_one(ch, got), &stop);
  stop.request_stop("client went away");
  CHECK(receiver.finished);
  CHECK(receiver.cancelled_reason() == "client went away");
  CHECK(ch.try_send(5));  // not handed to the cancelled receiver
  CHECK(ch.size() == 1);

  swp::StopSignal stop_send;
  Started sender(send_all(ch, {6}), &stop_send);
  CHECK_FALSE(sender.finished);
  stop_send.request_stop("shutting down");
  CHECK(sender.cancelled_reason() == "shutting down");
  CHECK(ch.try_receive() == 5);
  CHECK_FALSE(ch.try_receive().has_value());  // 6 was never sent
}

TEST_CASE("a coroutine destroyed while it waits on a channel is unlinked: the channel skips it") {
  SUBCASE("a receiver") {
    swp::Channel<int> ch(1);
    swp::StopSignal stop;
    std::optional<int> lost, kept;
    {
      Started gone(receive_one(ch, lost), &stop);
      CHECK_FALSE(gone.finished);
    }  // its frame freed while it waits, first in line
    Started stays(receive_one(ch, kept));
    stop.request_stop("after the frame is gone");  // its callback went with it
    CHECK(ch.try_send(5));  // used to hand 5 to the freed frame and resume it
    CHECK(stays.finished);
    CHECK(kept == 5);
    CHECK_FALSE(lost.has_value());
    CHECK(ch.size() == 0);
  }
  SUBCASE("a sender") {
    swp::Channel<int> ch(1);
    CHECK(ch.try_send(1));
    swp::StopSignal stop;
    {
      Started gone(send_all(ch, {2}), &stop);
      CHECK_FALSE(gone.finished);
    }  // its frame (and the value it offered) freed while it waits for room
    Started stays(send_all(ch, {3}));
    stop.request_stop("after the frame is gone");
    CHECK(ch.try_receive() == 1);  // used to move the freed 2 into the room and resume it
    CHECK(stays.finished);
    CHECK(ch.try_receive() == 3);
    CHECK_FALSE(ch.try_receive().has_value());
    ch.close();  // refuses nobody: no waiter is left
    CHECK(ch.done());
  }
}

TEST_CASE("a wait under a signal that already fired is cancelled at once") {
  swp::Channel<int> ch(1);
  swp::StopSignal stop;
  stop.request_stop("too late");
  std::optional<int> got;
  Started receiver(receive_one(ch, got), &stop);
  CHECK(receiver.cancelled_reason() == "too late");
}

TEST_CASE("a channel moves move-only values") {
  swp::Channel<std::unique_ptr<int>> ch(1);
  auto v = std::make_unique<int>(3);
  CHECK(ch.try_send(v));
  CHECK(v == nullptr);
  auto got = ch.try_receive();
  REQUIRE(got.has_value());
  CHECK(**got == 3);
}

namespace {

// Sends `value` as an lvalue; records whether the caller still has it when the send ends in
// an error (ChannelClosed, Cancelled).
swp::Co<void> send_kept(swp::Channel<std::unique_ptr<int>>& ch, std::unique_ptr<int>& value,
                        bool& kept) {
  try {
    co_await ch.send(value);
  } catch (...) {
    kept = value != nullptr && *value == 8;
    throw;
  }
}

}  // namespace

TEST_CASE("a refused or cancelled send of an lvalue leaves the value with the caller") {
  SUBCASE("refused at once: the channel is closed") {
    swp::Channel<std::unique_ptr<int>> ch(1);
    ch.close();
    auto value = std::make_unique<int>(8);
    bool kept = false;
    Started sender(send_kept(ch, value, kept));
    CHECK(sender.finished);
    CHECK_THROWS_AS(std::rethrow_exception(sender.error), swp::ChannelClosed);
    CHECK(kept);
  }
  SUBCASE("refused while waiting: close()") {
    swp::Channel<std::unique_ptr<int>> ch(1);
    CHECK(ch.try_send(std::make_unique<int>(1)));
    auto value = std::make_unique<int>(8);
    bool kept = false;
    Started sender(send_kept(ch, value, kept));
    CHECK_FALSE(sender.finished);
    ch.close();
    CHECK(sender.finished);
    CHECK_THROWS_AS(std::rethrow_exception(sender.error), swp::ChannelClosed);
    CHECK(kept);
  }
  SUBCASE("cancelled while waiting") {
    swp::Channel<std::unique_ptr<int>> ch(1);
    CHECK(ch.try_send(std::make_unique<int>(1)));
    auto value = std::make_unique<int>(8);
    bool kept = false;
    swp::StopSignal stop;
    Started sender(send_kept(ch, value, kept), &stop);
    CHECK_FALSE(sender.finished);
    stop.request_stop("client went away");
    CHECK(sender.cancelled_reason() == "client went away");
    CHECK(kept);
    CHECK(ch.size() == 1);
  }
  SUBCASE("accepted after a wait: moved from then, and received") {
    swp::Channel<std::unique_ptr<int>> ch(1);
    CHECK(ch.try_send(std::make_unique<int>(1)));
    auto value = std::make_unique<int>(8);
    bool kept = false;
    Started sender(send_kept(ch, value, kept));
    CHECK_FALSE(sender.finished);
    CHECK(value != nullptr);  // not taken while it waits
    CHECK(**ch.try_receive() == 1);
    CHECK(sender.finished);
    CHECK_FALSE(sender.error);
    CHECK(value == nullptr);
    CHECK(**ch.try_receive() == 8);
  }
}

TEST_CASE("a send of an rvalue or a const lvalue owns its value, and copies a const one") {
  swp::Channel<std::string> ch(3);
  const std::string constant = "c";
  std::string moved = "m";
  swp::sync_wait([&]() -> swp::Co<void> {
    co_await ch.send(constant);
    co_await ch.send(std::move(moved));
    co_await ch.send("t");
  }());
  CHECK(constant == "c");
  CHECK(ch.try_receive() == "c");
  CHECK(ch.try_receive() == "m");
  CHECK(ch.try_receive() == "t");
}

TEST_CASE("producers and a consumer on different threads pass every value exactly once") {
  constexpr int producers = 3, per_producer = 2000;
  swp::Channel<int> ch(4);
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&ch, p] {
      std::vector<int> values;
      for (int i = 0; i < per_producer; ++i) values.push_back(p * per_producer + i);
      swp::sync_wait(send_all(ch, std::move(values)));
    });
  }
  std::vector<int> got;
  std::thread consumer([&] { swp::sync_wait(receive_all(ch, got)); });
  for (auto& t : threads) t.join();
  ch.close();
  consumer.join();
  REQUIRE(got.size() == static_cast<std::size_t>(producers * per_producer));
  // Each producer's values arrive in its order; together, each value once.
  std::vector<int> last(producers, -1);
  std::vector<bool> seen(got.size(), false);
  for (int v : got) {
    CHECK_FALSE(seen[static_cast<std::size_t>(v)]);
    seen[static_cast<std::size_t>(v)] = true;
    CHECK(v > last[static_cast<std::size_t>(v / per_producer)]);
    last[static_cast<std::size_t>(v / per_producer)] = v;
  }
}

}  // namespace test_channel
