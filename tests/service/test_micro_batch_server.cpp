// The micro-batch service of examples/service, run in-process on an ephemeral port with plain
// blocking client sockets. No timing assertions: every wait has a deadline, and what is
// checked (answers, counts, bounds) holds however the threads are scheduled.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "../../examples/service/micro_batch_server.hpp"

namespace test_micro_batch_server {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using service::Response;
using service::Status;

constexpr auto deadline = 30s;  // for any one wait: generous, a busy CI machine is slow

// A blocking client on raw sockets: every receive waits with poll() up to `deadline`, so a
// server that never answers fails the test instead of hanging it.
class Client {
 public:
  /// Connects; `receive_buffer` > 0 sets SO_RCVBUF first (a small one: the server's answers
  /// back up sooner when the client does not read).
  explicit Client(std::uint16_t port, int receive_buffer = 0) : Client() {
    if (receive_buffer > 0)
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    connect(port);
  }
  /// A socket, not connected yet (connect() later).
  Client() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) { REQUIRE(fd_ >= 0); }

  void connect(std::uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client() { close(); }

  void send_bytes(std::span<const std::byte> bytes) {
    for (std::size_t done = 0; done < bytes.size();) {
      pollfd p{fd_, POLLOUT, 0};
      REQUIRE(::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(deadline).count())) == 1);
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      REQUIRE(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }

  void send(std::uint64_t id, std::uint32_t rounds, std::span<const std::byte> payload) {
    std::vector<std::byte> frame;
    service::append_request(frame, id, rounds, payload);
    send_bytes(frame);
  }

  // Sends what it can of `bytes` until the socket stays full for `patience` (the server
  // stopped reading); returns how many bytes went.
  std::size_t send_until_blocked(std::span<const std::byte> bytes,
                                 std::chrono::milliseconds patience) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(patience.count())) != 1) break;
      const ssize_t n =
          ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // the server closed it
      if (n > 0) done += static_cast<std::size_t>(n);
    }
    return done;
  }

  // Whether the server closes the connection (end of file or a reset) within `wait`; reads
  // and discards whatever answers come before.
  bool closed_by_server(std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) return false;
      std::byte buf[256];
      if (::recv(fd_, buf, sizeof buf, MSG_DONTWAIT) <= 0 && errno != EAGAIN) return true;
    }
  }

  // The next response, or nothing when the server closed the connection.
  std::optional<Response> receive(std::chrono::milliseconds wait = deadline) {
    std::byte buf[service::response_size];
    std::size_t have = 0;
    while (have < sizeof buf) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(wait.count())) != 1)
        throw std::runtime_error("no response within the deadline");
      const ssize_t n = ::recv(fd_, buf + have, sizeof buf - have, 0);
      if (n == 0 && have == 0) return std::nullopt;
      if (n <= 0) throw std::runtime_error("connection broken in the middle of a response");
      have += static_cast<std::size_t>(n);
    }
    return service::read_response(buf);
  }

  // Closes with a reset (SO_LINGER 0) when `abortive`, as a crashing client would.
  void close(bool abortive = false) {
    if (fd_ < 0) return;
    if (abortive) {
      const linger l{1, 0};
      ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::vector<std::byte> payload_of(std::uint64_t id, std::size_t size) {
  std::vector<std::byte> p(size);
  for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<std::byte>((id * 131 + i * 7) & 0xff);
  return p;
}

std::uint64_t expected(std::uint64_t id, std::size_t size, std::uint32_t rounds) {
  return service::answer_of(id, service::digest(payload_of(id, size), rounds));
}

// Ends the server with a deadline; a server that does not end aborts the run (its threads
// cannot be joined), which fails the suite loudly rather than hanging it.
void finish(service::MicroBatchServer& server) {
  server.stop();
  if (!server.wait_for(deadline)) {
    FAIL_CHECK("the server did not shut down within the deadline");
    std::abort();
  }
}

// Polls `done` until it holds, up to the deadline.
template <class F>
bool eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace

TEST_CASE("the micro-batch service answers every request with its id and its payload's digest") {
  service::MicroBatchServer server(
      {.port = 0, .threads = 2, .max_batch = 8, .batch_window = std::chrono::microseconds(200)});
  server.start();
  REQUIRE(server.port() != 0);
  constexpr std::uint64_t per_client = 40;
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < 3; ++c) clients.push_back(std::make_unique<Client>(server.port()));
  // Pipelined: every client sends all its requests before reading, so batches mix clients.
  for (std::size_t c = 0; c < clients.size(); ++c) {
    for (std::uint64_t k = 0; k < per_client; ++k) {
      const std::uint64_t id = c * 1000 + k;
      clients[c]->send(id, static_cast<std::uint32_t>(k % 4), payload_of(id, 1 + (k * 37) % 300));
    }
    clients[c]->send(c * 1000 + 999, service::max_rounds + 1, payload_of(0, 8));  // refused
  }
  for (std::size_t c = 0; c < clients.size(); ++c) {
    std::map<std::uint64_t, Response> got;
    for (std::uint64_t k = 0; k <= per_client; ++k) {
      const auto r = clients[c]->receive();
      REQUIRE(r);
      CHECK(got.emplace(r->id, *r).second);  // one answer per id
    }
    for (std::uint64_t k = 0; k < per_client; ++k) {
      const std::uint64_t id = c * 1000 + k;
      REQUIRE(got.contains(id));
      CHECK(got[id].status == Status::ok);
      CHECK(got[id].result == expected(id, 1 + (k * 37) % 300, static_cast<std::uint32_t>(k % 4)));
    }
    REQUIRE(got.contains(c * 1000 + 999));
    CHECK(got[c * 1000 + 999].status == Status::bad_request);
  }
  finish(server);
  const auto& stats = server.stats();
  CHECK(stats.get(stats.admitted) == 3 * (per_client + 1));
  CHECK(stats.answered() == stats.get(stats.admitted));
  CHECK(stats.get(stats.bad_requests) == 3);
  CHECK(stats.get(stats.delivered) == 3 * (per_client + 1));
  CHECK(stats.get(stats.batches) >= 3 * (per_client + 1) / 8);
  CHECK_FALSE(server.error());
}

TEST_CASE(
    "clients of the micro-batch service that disconnect mid-request do not hold up the others") {
  service::MicroBatchServer server(
      {.port = 0, .threads = 2, .max_batch = 16, .batch_window = std::chrono::microseconds(300)});
  server.start();
  {
    Client leaves(server.port());  // sends, then closes before any answer
    for (std::uint64_t id = 0; id < 10; ++id) leaves.send(id, 2, payload_of(id, 100));
    leaves.close();
    Client resets(server.port());  // sends, then resets the connection
    for (std::uint64_t id = 10; id < 15; ++id) resets.send(id, 2, payload_of(id, 100));
    resets.close(/*abortive=*/true);
    Client cut(server.port());  // leaves in the middle of a frame
    std::vector<std::byte> frame;
    service::append_request(frame, 20, 1, payload_of(20, 64));
    cut.send_bytes(std::span(frame).first(frame.size() / 2));
    cut.close();
  }
  Client stays(server.port());
  for (std::uint64_t id = 100; id < 150; ++id) stays.send(id, 3, payload_of(id, 200));
  std::map<std::uint64_t, Response> got;
  for (int k = 0; k < 50; ++k) {
    const auto r = stays.receive();
    REQUIRE(r);
    got.emplace(r->id, *r);
  }
  for (std::uint64_t id = 100; id < 150; ++id) {
    REQUIRE(got.contains(id));
    CHECK(got[id].status == Status::ok);
    CHECK(got[id].result == expected(id, 200, 3));
  }
  const auto& stats = server.stats();
  // Whatever the server read from the clients that left is answered (then dropped).
  CHECK(eventually([&] { return stats.answered() == stats.get(stats.admitted); }));
  finish(server);
  CHECK(stats.answered() == stats.get(stats.admitted));
  CHECK(stats.get(stats.delivered) + stats.get(stats.dropped) ==
        stats.answered() + stats.get(stats.rejected));
  CHECK(stats.get(stats.protocol_errors) == 0);
  CHECK(stats.get(stats.connections) == 4);
}

TEST_CASE(
    "shutting the micro-batch service down answers the requests still gathering into a batch") {
  // A window far longer than the test: the requests sit in the forming batch until stop().
  service::MicroBatchServer server(
      {.port = 0, .threads = 2, .max_batch = 1000, .batch_window = std::chrono::seconds(600)});
  server.start();
  Client client(server.port());
  for (std::uint64_t id = 0; id < 20; ++id) client.send(id, 1, payload_of(id, 50));
  const auto& stats = server.stats();
  REQUIRE(eventually([&] { return stats.get(stats.admitted) == 20; }));
  CHECK(stats.answered() == 0);
  server.stop();
  std::map<std::uint64_t, Response> got;
  for (int k = 0; k < 20; ++k) {
    const auto r = client.receive();
    REQUIRE(r);
    got.emplace(r->id, *r);
  }
  for (std::uint64_t id = 0; id < 20; ++id) {
    REQUIRE(got.contains(id));
    CHECK(got[id].status == Status::ok);
    CHECK(got[id].result == expected(id, 50, 1));
  }
  CHECK_FALSE(client.receive());  // then the server closes the connection
  finish(server);
  CHECK(stats.get(stats.batches) == 1);
}

TEST_CASE("the micro-batch service rejects requests past --max-requests and shuts down by itself") {
  service::MicroBatchServer server({.port = 0,
                                    .threads = 2,
                                    .max_batch = 1000,
                                    .batch_window = std::chrono::seconds(600),
                                    .max_requests = 5});
  server.start();
  Client client(server.port());
  std::vector<std::byte> frames;  // one write: the server sees them in this order
  for (std::uint64_t id = 0; id < 8; ++id)
    service::append_request(frames, id, 1, payload_of(id, 30));
  client.send_bytes(frames);
  std::map<std::uint64_t, Response> got;
  for (int k = 0; k < 8; ++k) {
    const auto r = client.receive();
    REQUIRE(r);
    got.emplace(r->id, *r);
  }
  for (std::uint64_t id = 0; id < 8; ++id) {
    REQUIRE(got.contains(id));
    if (id < 5) {
      CHECK(got[id].status == Status::ok);
      CHECK(got[id].result == expected(id, 30, 1));
    } else {
      CHECK(got[id].status == Status::rejected);
    }
  }
  CHECK_FALSE(client.receive());
  REQUIRE(server.wait_for(deadline));  // no stop(): the limit ended it
  const auto& stats = server.stats();
  CHECK(stats.get(stats.admitted) == 5);
  CHECK(stats.get(stats.rejected) == 3);
}

TEST_CASE("back-pressure bounds the requests inside the micro-batch service") {
  // One request per batch, one batch in flight, one queued, one waiting: a client that sends
  // far more than that at once is read only as room frees (its socket buffers hold the rest).
  const service::ServerOptions options{.port = 0,
                                       .threads = 2,
                                       .max_batch = 1,
                                       .batch_window = std::chrono::microseconds(100),
                                       .depth = 1,
                                       .capacity = 1,
                                       .max_waiting = 1};
  service::MicroBatchServer server(options);
  server.start();
  Client client(server.port());
  constexpr std::size_t size = 16 * 1024;  // one frame per read: the read buffer fits one
  std::vector<std::byte> frames;
  for (std::uint64_t id = 0; id < 30; ++id)
    service::append_request(frames, id, 8, payload_of(id, size));
  std::thread writer([&] { client.send_bytes(frames); });
  std::map<std::uint64_t, Response> got;
  for (int k = 0; k < 30; ++k) {
    const auto r = client.receive();
    REQUIRE(r);
    got.emplace(r->id, *r);
  }
  writer.join();
  for (std::uint64_t id = 0; id < 30; ++id) {
    REQUIRE(got.contains(id));
    CHECK(got[id].result == expected(id, size, 8));
  }
  finish(server);
  // forming + waiting + submitting + inbox + the one the pipeline received to admit next + in
  // flight, plus the frames of one read (one here: the read buffer holds one frame).
  const std::uint64_t bound = options.max_batch * (1 + options.max_waiting + 1 + options.capacity +
                                                   1 + static_cast<std::size_t>(options.depth)) +
                              1;
  CHECK(server.stats().get(server.stats().peak_in_server) <= bound);
}

TEST_CASE("the micro-batch service sets the nice value of its stream threads as they start") {
  // Raising a nice value needs no privilege, so this holds for any user.
  service::MicroBatchServer server({.port = 0, .stream_nice = 3});
  server.start();
  Client client(server.port());
  client.send(11, 1, payload_of(11, 10));
  const auto r = client.receive();
  REQUIRE(r);
  CHECK(r->result == expected(11, 10, 1));
  // The stream threads are named after their streams (swp::ThreadStart); read their nice
  // value (field 19 of /proc/self/task/<tid>/stat) while the server still runs.
  std::map<std::string, int> nice;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (!name.starts_with("swp-stream:")) continue;
    std::ifstream stat_file(task.path() / "stat");
    std::string stat;
    std::getline(stat_file, stat);
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // from field 3 (state) on
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
    }
    nice[name] = std::stoi(field);
  }
  finish(server);
  CHECK(nice.contains("swp-stream:comp"));  // compute
  CHECK(nice.contains("swp-stream:copy"));
  for (const auto& [name, value] : nice) {
    const std::string& thread = name;  // clang 14 cannot CAPTURE a structured binding
    CAPTURE(thread);
    CHECK(value == 3);
  }
  CHECK(server.stats().get(server.stats().reniced_streams) == nice.size());
}

TEST_CASE("the micro-batch service's timeline has every batch's steps in order (--trace)") {
  service::MicroBatchServer server({.port = 0,
                                    .max_batch = 4,
                                    .batch_window = std::chrono::microseconds(100),
                                    .keep_timeline = true});
  server.start();
  Client client(server.port());
  constexpr std::uint64_t requests = 20;
  for (std::uint64_t id = 0; id < requests; ++id) client.send(id, 2, payload_of(id, 40));
  for (std::uint64_t k = 0; k < requests; ++k) REQUIRE(client.receive());
  finish(server);
  const auto path = std::filesystem::temp_directory_path() /
                    ("swp-timeline-" + std::to_string(::getpid()) + ".txt");
  REQUIRE(server.timeline().write(path.string()));
  std::ifstream in(path);
  std::string header;
  std::getline(in, header);
  CHECK(header.starts_with("requests opened_us sealed_us submitted_us decoded_us"));
  std::uint64_t batches = 0, total = 0;
  for (std::string line; std::getline(in, line);) {
    CAPTURE(line);
    std::istringstream fields(line);
    std::vector<std::int64_t> v;
    for (std::int64_t x = 0; fields >> x;) v.push_back(x);
    REQUIRE(v.size() == 11);
    total += static_cast<std::uint64_t>(v[0]);
    ++batches;
    // opened <= sealed <= submitted <= decoded <= compute begin <= end <= encoded <= answered
    for (std::size_t i = 2; i <= 8; ++i) CHECK(v[i - 1] <= v[i]);
    CHECK(v[9] >= 0);   // compute CPU time
    CHECK(v[10] >= 0);  // run-queue wait (Linux says)
  }
  std::filesystem::remove(path);
  CHECK(total == requests);
  CHECK(batches == server.stats().get(server.stats().batches));
}

TEST_CASE("a malformed frame closes only its own connection of the micro-batch service") {
  service::MicroBatchServer server({.port = 0});
  server.start();
  Client bad(server.port());
  SUBCASE("a body too short for a request header") {
    const std::byte tiny[] = {std::byte{3}, std::byte{0}, std::byte{0}, std::byte{0},
                              std::byte{1}, std::byte{2}, std::byte{3}};
    bad.send_bytes(tiny);  // a body of 3 bytes cannot hold a request header
  }
  SUBCASE("a body longer than the protocol allows") {
    std::byte header[4];
    service::store_u32(header, static_cast<std::uint32_t>(service::max_body + 1));
    bad.send_bytes(header);  // refused from its size alone: the server reads no body
  }
  CHECK_FALSE(bad.receive());
  Client good(server.port());
  good.send(7, 1, payload_of(7, 10));
  const auto r = good.receive();
  REQUIRE(r);
  CHECK(r->result == expected(7, 10, 1));
  finish(server);
  CHECK(server.stats().get(server.stats().protocol_errors) == 1);
}

TEST_CASE("the micro-batch service answers a batch whose payloads are all empty") {
  // A batch of empty payloads packs no byte at all: nothing may be copied from or to the
  // empty buffer (UBSan: memcpy from a null pointer).
  service::MicroBatchServer server(
      {.port = 0, .max_batch = 8, .batch_window = std::chrono::microseconds(200)});
  server.start();
  Client client(server.port());
  std::vector<std::byte> frames;  // one write: most likely one batch
  for (std::uint64_t id = 0; id < 8; ++id) service::append_request(frames, id, 3, {});
  client.send_bytes(frames);
  std::map<std::uint64_t, Response> got;
  for (int k = 0; k < 8; ++k) {
    const auto r = client.receive();
    REQUIRE(r);
    got.emplace(r->id, *r);
  }
  for (std::uint64_t id = 0; id < 8; ++id) {
    REQUIRE(got.contains(id));
    CHECK(got[id].status == Status::ok);
    CHECK(got[id].result == expected(id, 0, 3));
  }
  finish(server);
}

TEST_CASE(
    "a client of the micro-batch service that does not read its answers is no longer read, "
    "and the others are served") {
  // Small kernel buffers on both ends, so that unread answers back up into the server soon.
  const service::ServerOptions options{.port = 0,
                                       .threads = 2,
                                       .max_batch = 16,
                                       .batch_window = std::chrono::microseconds(200),
                                       .depth = 2,
                                       .capacity = 2,
                                       .max_waiting = 1,
                                       .max_unwritten = 8 * 1024,
                                       .send_buffer = 4096};
  service::MicroBatchServer server(options);
  server.start();
  const auto& stats = server.stats();
  Client lazy(server.port(), /*receive_buffer=*/4096);
  // 20 000 requests: 480 KB of answers, far more than the kernel buffers and the bound.
  std::vector<std::byte> frames;
  for (std::uint64_t id = 0; id < 20'000; ++id) service::append_request(frames, id, 1, {});
  std::jthread sender([&] { lazy.send_until_blocked(frames, 300ms); });
  REQUIRE(eventually([&] { return stats.get(stats.write_pauses) >= 1; }));
  // Another client meanwhile: every request answered.
  Client good(server.port());
  for (std::uint64_t id = 100'000; id < 100'050; ++id) good.send(id, 2, payload_of(id, 64));
  for (int k = 0; k < 50; ++k) {
    const auto r = good.receive();
    REQUIRE(r);
    CHECK(r->status == Status::ok);
    CHECK(r->result == expected(r->id, 64, 2));
  }
  sender.join();
  // Past the bound, the answers of what was already read still come: the requests inside the
  // server (back-pressure's bound) and those of one read (a 16 KiB buffer of 16-byte frames).
  const std::uint64_t in_server =
      options.max_batch * (1 + options.max_waiting + 1 + options.capacity + 1 +
                           static_cast<std::size_t>(options.depth));
  const std::uint64_t bound =
      options.max_unwritten + (in_server + 16 * 1024 / 16) * service::response_size;
  CHECK(stats.get(stats.peak_unwritten) > options.max_unwritten);  // the bound was reached
  CHECK(stats.get(stats.peak_unwritten) <= bound);
  CHECK(stats.get(stats.admitted) < 20'000 + 50);  // the rest was never read
  lazy.close(/*abortive=*/true);
  finish(server);
}

TEST_CASE("the micro-batch service refuses a connection beyond its cap at once, saying busy") {
  service::MicroBatchServer server({.port = 0, .max_connections = 2});
  server.start();
  REQUIRE(server.max_connections() == 2);
  const auto& stats = server.stats();
  auto served = [&](Client& c, std::uint64_t id) {
    c.send(id, 1, payload_of(id, 20));
    const auto r = c.receive();
    return r && r->status == Status::ok && r->result == expected(id, 20, 1);
  };
  auto a = std::make_unique<Client>(server.port());
  Client b(server.port());
  CHECK(served(*a, 1));
  CHECK(served(b, 2));
  Client c(server.port());  // the third: refused before it sends anything
  const auto refusal = c.receive();
  REQUIRE(refusal);
  CHECK(refusal->status == Status::busy);
  CHECK(refusal->id == 0);
  CHECK_FALSE(c.receive());  // then closed
  CHECK(stats.get(stats.refused) == 1);
  CHECK(stats.get(stats.peak_connections) == 2);
  CHECK(served(b, 3));  // the connections open go on
  a.reset();            // one leaves: a new one is taken once the server saw it go
  bool taken = false;
  for (std::uint64_t attempt = 0; !taken && attempt < 3000; ++attempt) {
    Client d(server.port());
    d.send(10 + attempt, 1, payload_of(10 + attempt, 20));
    const auto r = d.receive();
    REQUIRE(r);
    taken = r->status == Status::ok;
    if (!taken) std::this_thread::sleep_for(10ms);
  }
  CHECK(taken);
  finish(server);
}

TEST_CASE(
    "the micro-batch service out of descriptors refuses a new connection instead of leaving "
    "it unanswered") {
  // The cap above what the descriptors allow, then no descriptor left for the process: the
  // accept fails (EMFILE) with the connection waiting in the backlog.
  service::MicroBatchServer server({.port = 0, .max_connections = 100'000});
  server.start();
  Client first(server.port());
  first.send(1, 1, payload_of(1, 20));
  REQUIRE(first.receive());
  Client late;  // its descriptor taken now: connect() needs none
  const int lowest_free = ::dup(0);
  REQUIRE(lowest_free >= 0);
  ::close(lowest_free);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  struct Restore {
    rlimit limit;
    ~Restore() { ::setrlimit(RLIMIT_NOFILE, &limit); }
  } restore{saved};
  rlimit none = saved;
  none.rlim_cur = static_cast<rlim_t>(lowest_free);  // every descriptor below it is taken
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &none) == 0);
  late.connect(server.port());
  std::optional<Response> refusal;
  try {
    refusal = late.receive(10s);
  } catch (const std::runtime_error&) {  // unanswered
  }
  ::setrlimit(RLIMIT_NOFILE, &saved);
  REQUIRE(refusal);
  CHECK(refusal->status == Status::busy);
  CHECK(server.stats().get(server.stats().refused) >= 1);
  // Descriptors back, connections are taken again (after a refusal or so: the server may be
  // checking its backlog with the spare descriptor just as they come back).
  bool taken = false;
  for (std::uint64_t attempt = 0; !taken && attempt < 100; ++attempt) {
    Client again(server.port());
    again.send(2, 1, payload_of(2, 20));
    const auto r = again.receive();
    REQUIRE(r);
    taken = r->status == Status::ok;
    if (!taken) std::this_thread::sleep_for(10ms);
  }
  CHECK(taken);
  finish(server);
}

TEST_CASE(
    "the micro-batch service closes a connection idle for its idle timeout, not one waiting "
    "for its answers") {
  // A batch window far longer than the test: the waiting client's requests stay in the forming
  // batch until stop(), its connection quiet all along.
  service::MicroBatchServer server({.port = 0,
                                    .max_batch = 1000,
                                    .batch_window = std::chrono::seconds(600),
                                    .idle_timeout = 200ms,
                                    .frame_timeout = 0ms});
  server.start();
  const auto& stats = server.stats();
  Client waiting(server.port());
  for (std::uint64_t id = 0; id < 3; ++id) waiting.send(id, 1, payload_of(id, 30));
  Client idle(server.port());
  CHECK(idle.closed_by_server(10s));
  CHECK(stats.get(stats.idle_timeouts) == 1);
  std::this_thread::sleep_for(600ms);  // three idle timeouts more
  server.stop();
  for (int k = 0; k < 3; ++k) {
    const auto r = waiting.receive();
    REQUIRE(r);
    CHECK(r->status == Status::ok);
  }
  finish(server);
}

TEST_CASE("the micro-batch service closes a connection whose frame is not whole in time") {
  service::MicroBatchServer server({.port = 0, .idle_timeout = 60s, .frame_timeout = 200ms});
  server.start();
  const auto& stats = server.stats();
  std::vector<std::byte> frame;
  service::append_request(frame, 5, 1, payload_of(5, 100));
  Client slow(server.port());
  std::jthread sender;  // joined before `slow` closes, also when a REQUIRE fails
  SUBCASE("half a header, then nothing") { slow.send_bytes(std::span(frame).first(2)); }
  SUBCASE("a byte at a time (slowloris): each one keeps it from going idle") {
    sender = std::jthread([&](std::stop_token stop) {
      for (std::size_t i = 0; i < frame.size() && !stop.stop_requested(); ++i) {
        if (slow.send_until_blocked(std::span(frame).subspan(i, 1), 1000ms) != 1) return;
        std::this_thread::sleep_for(50ms);  // the whole frame would take 6 s
      }
    });
  }
  Client good(server.port());  // served meanwhile
  good.send(7, 1, payload_of(7, 10));
  const auto r = good.receive();
  REQUIRE(r);
  CHECK(r->result == expected(7, 10, 1));
  CHECK(slow.closed_by_server(10s));
  sender = {};  // stops and joins it
  finish(server);
  CHECK(stats.get(stats.frame_timeouts) == 1);
  CHECK(stats.get(stats.idle_timeouts) == 0);
  CHECK(stats.get(stats.admitted) == 1);
}

}  // namespace test_micro_batch_server
