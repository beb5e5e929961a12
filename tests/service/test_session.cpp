// service::Session's deadlines, step by step on an io_context only this thread runs: the order
// in which the server's threads get to a deadline check and to a read is the test's to choose.

#include <doctest/doctest.h>
#include <poll.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "../../examples/service/batch_plan.hpp"
#include "../../examples/service/micro_batcher.hpp"
#include "../../examples/service/protocol.hpp"
#include "../../examples/service/server_stats.hpp"
#include "../../examples/service/session.hpp"
#include "swp/engine/asio_runtime.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_session {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using boost::asio::ip::tcp;

// A session over a loopback connection, its io_context run only by poll(): nothing happens
// between two polls but what the test does. The batcher's window is far longer than a test,
// so requests read stay in its forming batch.
struct Connected {
  boost::asio::io_context io;
  swp::AsioRuntime runtime{io.get_executor()};
  swp::DataFlowPipeline<service::BatchCtx> pipe{runtime, service::make_batch_plan(), 2};
  service::ServerStats stats;
  service::MicroBatcher batcher{
      io.get_executor(), pipe, {.max_batch = 1000, .window = 600s}, stats};
  tcp::acceptor acceptor{io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0)};
  tcp::socket client{io};
  int server_fd = -1;
  bool closed = false;
  std::shared_ptr<service::Session> session;

  explicit Connected(service::SessionLimits limits = {.idle_timeout = 200ms,
                                                      .frame_timeout = 0ms}) {
    client.connect(acceptor.local_endpoint());
    tcp::socket socket = acceptor.accept();
    server_fd = socket.native_handle();
    session = std::make_shared<service::Session>(
        std::move(socket), batcher, stats, limits,
        [this](const std::shared_ptr<service::Session>&) { closed = true; });
    session->start();
    io.poll();  // the session reads (its read waits for bytes)
  }
  ~Connected() {
    session->close();
    io.poll();
    session.reset();
  }

  // The client sends `bytes`: true once they are in the server's socket, not read yet (10 s).
  bool arrive_unread(std::span<const std::byte> bytes) {
    boost::asio::write(client, boost::asio::buffer(bytes.data(), bytes.size()));
    pollfd p{server_fd, POLLIN, 0};
    return ::poll(&p, 1, 10'000) == 1;
  }

  // The server's sweep finds a deadline passed (it is 1 s later than now); the check is
  // queued on the session, behind nothing.
  void sweep() { session->check_deadlines(service::Session::Clock::now() + 1s); }
};

}  // namespace

TEST_CASE("a session keeps a client whose request came before its idle deadline's check ran") {
  // The server's threads stalled past the idle timeout while the request arrived: the check
  // runs first, the read of the request after it. The client did send: it is not idle.
  Connected c;
  std::vector<std::byte> frame;
  service::append_request(frame, 1, 1, std::vector<std::byte>(16, std::byte{7}));
  REQUIRE(c.arrive_unread(frame));
  c.sweep();
  c.io.poll();  // the check, then the read
  CHECK_FALSE(c.closed);
  CHECK(c.stats.get(c.stats.idle_timeouts) == 0);
  CHECK(c.stats.get(c.stats.admitted) == 1);  // the request was read and went to the batcher
  // Its request is the server's to answer now: no deadline runs against the client.
  c.sweep();
  c.io.poll();
  c.sweep();
  c.io.poll();
  CHECK_FALSE(c.closed);
}

TEST_CASE("a session closes an idle client at the second check in a row that finds it idle") {
  Connected c;
  c.sweep();
  c.io.poll();
  CHECK_FALSE(c.closed);  // the first check: a read may still be on its way
  c.sweep();
  c.io.poll();
  CHECK(c.closed);
  CHECK(c.stats.get(c.stats.idle_timeouts) == 1);
}

TEST_CASE("a session closes a frame still not whole at the second check, bytes or not") {
  // A slowloris: each byte moves the idle clock, not the frame's.
  Connected c({.idle_timeout = 60s, .frame_timeout = 200ms});
  std::vector<std::byte> frame;
  service::append_request(frame, 1, 1, std::vector<std::byte>(16, std::byte{7}));
  REQUIRE(c.arrive_unread(std::span(frame).first(1)));
  c.io.poll();  // read: the frame's clock starts
  c.sweep();
  c.io.poll();
  CHECK_FALSE(c.closed);
  REQUIRE(c.arrive_unread(std::span(frame).subspan(1, 1)));
  c.io.poll();  // read: a byte moved, the frame is still not whole
  c.sweep();
  c.io.poll();
  CHECK(c.closed);
  CHECK(c.stats.get(c.stats.frame_timeouts) == 1);
  CHECK(c.stats.get(c.stats.idle_timeouts) == 0);
}

}  // namespace test_session
