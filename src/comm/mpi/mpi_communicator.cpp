#include "swp/comm/mpi/mpi_communicator.hpp"

// The C API only: Open MPI's C++ bindings do not compile cleanly at warning_level=3.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "swp/device/stream.hpp"

namespace swp {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Communicators destroyed with operations still under way (see ~MpiSession).
std::atomic<int>& abandoned_operations() {
  static std::atomic<int> count{0};
  return count;
}

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::u8:
      return MPI_UINT8_T;
    case DataType::i32:
      return MPI_INT32_T;
    case DataType::i64:
      return MPI_INT64_T;
    case DataType::f32:
      return MPI_FLOAT;
    case DataType::f64:
      return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return MPI_SUM;
    case ReduceOp::prod:
      return MPI_PROD;
    case ReduceOp::min:
      return MPI_MIN;
    case ReduceOp::max:
      return MPI_MAX;
  }
  return MPI_SUM;
}

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (initialized == 0) {
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      throw CommError(-1, "MPI_Init_thread", "MPI_Init_thread failed");
    finalize_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE)
    throw CommError(-1, "MPI_Init_thread",
                    "this MPI gives thread level " + std::to_string(provided) +
                        ", swp needs MPI_THREAD_MULTIPLE (streams on several threads call MPI)");
}

MpiSession::MpiSession() {
  int argc = 0;
  char** argv = nullptr;
  MpiSession other(argc, argv);
  finalize_ = std::exchange(other.finalize_, false);
}

MpiSession::~MpiSession() {
  if (!finalize_) return;
  if (abandoned_operations().load(std::memory_order_relaxed) > 0) {
    // MPI_Finalize would wait for operations some rank never joined: end without it (mpirun
    // reports the rank as failed) rather than hang.
    std::fprintf(stderr,
                 "swp: MPI operations that timed out never completed; not calling MPI_Finalize\n");
    return;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0) MPI_Finalize();
}

struct MpiCommunicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::mutex mutex;                    // timed_out
  std::vector<MPI_Request> timed_out;  // operations that outlived their timeout

  // Operations start in MPI in the order they were called (their tickets), whichever streams
  // they are on: the call order is what the ranks agree on (the engines' globally ordered
  // tasks call in the same order on every rank), not the order the streams get to them.
  std::mutex turn_mutex;  // the fields below
  std::condition_variable turn_changed;
  std::uint64_t next_ticket = 0;
  std::uint64_t turn = 0;            // the ticket that starts next
  std::set<std::uint64_t> given_up;  // tickets that timed out before their turn came

  std::uint64_t take_ticket() {
    std::lock_guard lock(turn_mutex);
    return next_ticket++;
  }
  // With turn_mutex held, by the operation whose turn it was.
  void pass_turn() {
    ++turn;
    while (given_up.erase(turn) > 0) ++turn;
    turn_changed.notify_all();
  }
};

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  auto impl = std::make_unique<Impl>();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0)
    throw CommError(-1, "world",
                    "MpiCommunicator::world() needs MPI: make an swp::MpiSession first");
  if (const int rc = MPI_Comm_dup(MPI_COMM_WORLD, &impl->comm); rc != MPI_SUCCESS)
    throw CommError(-1, "MPI_Comm_dup", "MPI_Comm_dup failed: " + mpi_error(rc));
  MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(impl->comm, &impl->rank);
  MPI_Comm_size(impl->comm, &impl->size);
  return std::make_unique<MpiCommunicator>(std::move(impl));
}

MpiCommunicator::~MpiCommunicator() {
  // An operation that timed out may still complete (a late rank): wait for it once more.
  bool clean = true;
  {
    std::lock_guard lock(impl_->mutex);
    const auto deadline = SteadyClock::now() +
                          std::max<std::chrono::milliseconds>(timeout(), std::chrono::seconds(10));
    for (MPI_Request& request : impl_->timed_out) {
      int done = 0;
      while (MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0 &&
             SteadyClock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      clean = clean && done != 0;
    }
  }
  // An operation still under way keeps its communicator: freeing it would be erroneous.
  if (clean && impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  if (!clean) abandoned_operations().fetch_add(1, std::memory_order_relaxed);
}

int MpiCommunicator::rank() const noexcept { return impl_->rank; }
int MpiCommunicator::size() const noexcept { return impl_->size; }

namespace {

// What a rank is about to run, as the order check exchanges it (plain bytes, the same layout
// on every rank of one build).
struct OpDescriptor {
  char text[120] = {};  // "all_reduce 'what' (n type)", truncated
  bool operator==(const OpDescriptor&) const = default;
};

OpDescriptor descriptor_of(const std::string& text) {
  OpDescriptor d;
  text.copy(d.text, sizeof d.text - 1);
  return d;
}

// What the order check compares: the description without "rank R: " (which differs between
// ranks by design), and for all_to_all_v without its count (the ranks' totals differ too).
std::string check_text(const std::string& description, bool with_count) {
  const auto colon = description.find(": ");
  std::string text = colon == std::string::npos ? description : description.substr(colon + 2);
  if (!with_count) {
    const auto open = text.rfind(" (");
    const auto space = text.rfind(' ');
    if (open != std::string::npos && space != std::string::npos && space > open)
      text = text.substr(0, open) + " (" + text.substr(space + 1);  // "(N type)" -> "(type)"
  }
  return text;
}

enum class Waited { done, failed, timed_out };

// Tests `request` with a bounded back-off — a few quick looks (a collective whose peers are
// there completes in microseconds), then sleeps doubling to 1 ms — until it completed, failed
// (`rc`) or `deadline` passed.
Waited wait_for(MPI_Request& request, SteadyClock::time_point deadline, int& rc) {
  auto pause = std::chrono::microseconds(1);
  for (int polls = 0;; ++polls) {
    int done = 0;
    rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return Waited::failed;
    if (done != 0) return Waited::done;
    if (SteadyClock::now() >= deadline) return Waited::timed_out;
    if (polls < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
}

// Queues on `stream`: when its turn came (the call order), check the ranks' order when `check`
// is not empty (what this rank runs, as the ranks compare it), start the operation, test it
// until it completed or `timeout` passed, complete the promise. `start` returns an MPI error
// code.
Future<void> run_on(Stream& stream, MpiCommunicator::Impl& impl, std::string op,
                    std::string description, std::chrono::milliseconds timeout, std::string check,
                    std::function<int(MPI_Request*)> start) {
  Promise<void> promise;
  Future<void> future = promise.get_future();
  const std::uint64_t ticket = impl.take_ticket();
  stream.enqueue([&impl, promise, ticket, op = std::move(op), description = std::move(description),
                  timeout, check = std::move(check), start = std::move(start)]() mutable {
    const auto fail = [&](const std::string& message) {
      promise.set_error(std::make_exception_ptr(CommError(impl.rank, op, description + message)));
    };
    const auto time_out = [&](MPI_Request request, const std::string& what) {
      {
        std::lock_guard lock(impl.mutex);
        impl.timed_out.push_back(request);
      }
      promise.set_error(std::make_exception_ptr(CommTimeout(
          impl.rank, op,
          description + " did not complete" + what + " in " + std::to_string(timeout.count()) +
              " ms: a rank did not take part (it failed, or issued its operations on this "
              "communicator in another order)")));
    };
    const auto deadline = SteadyClock::now() + timeout;
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    {
      std::unique_lock lock(impl.turn_mutex);
      if (!impl.turn_changed.wait_until(lock, deadline, [&] { return impl.turn == ticket; })) {
        impl.given_up.insert(ticket);
        promise.set_error(std::make_exception_ptr(CommTimeout(
            impl.rank, op,
            description + " did not start in " + std::to_string(timeout.count()) +
                " ms: an operation called before it on this communicator (on another stream) "
                "has not started")));
        return;
      }
      if (!check.empty()) {
        // The turn stays this operation's until it started (or failed): the check's own
        // all_gather is the communicator's next operation on every rank.
        const OpDescriptor mine = descriptor_of(check);
        std::vector<OpDescriptor> all(static_cast<std::size_t>(impl.size));
        MPI_Request check = MPI_REQUEST_NULL;
        rc = MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE,
                            impl.comm, &check);
        Waited waited = Waited::failed;
        if (rc == MPI_SUCCESS) {
          lock.unlock();  // other operations only wait for their turn meanwhile
          waited = wait_for(check, deadline, rc);
          lock.lock();
        }
        if (waited != Waited::done) {
          impl.pass_turn();
          lock.unlock();
          if (waited == Waited::timed_out) {
            time_out(check, " (its order check)");
          } else {
            fail(" failed (its order check): " + mpi_error(rc));
          }
          return;
        }
        if (std::any_of(all.begin(), all.end(),
                        [&](const OpDescriptor& d) { return !(d == mine); })) {
          impl.pass_turn();
          lock.unlock();
          std::string each;
          for (std::size_t r = 0; r < all.size(); ++r)
            each +=
                (r == 0 ? "" : ", ") + std::string("rank ") + std::to_string(r) + " " + all[r].text;
          fail(" was not run: the ranks called different collectives here (order check: " + each +
               "); every rank must call them in the same order (globally ordered tasks)");
          return;
        }
      }
      try {
        rc = start(&request);
      } catch (const CommError&) {
        impl.pass_turn();
        promise.set_error(std::current_exception());
        return;
      } catch (const std::exception& e) {
        impl.pass_turn();
        lock.unlock();
        fail(std::string(" failed as it started: ") + e.what());
        return;
      }
      impl.pass_turn();
    }
    if (rc != MPI_SUCCESS) {
      fail(" failed: " + mpi_error(rc));
      return;
    }
    switch (wait_for(request, deadline, rc)) {
      case Waited::done:
        promise.set_value();
        return;
      case Waited::failed:
        fail(" failed: " + mpi_error(rc));
        return;
      case Waited::timed_out:
        time_out(request, "");
        return;
    }
  });
  return future;
}

int checked_count(std::size_t count, const std::string& description) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument(description + ": more than INT_MAX elements (MPI counts are int)");
  return static_cast<int>(count);
}

}  // namespace

Future<void> MpiCommunicator::do_all_reduce(Stream& stream, const void* send, void* recv,
                                            std::size_t count, DataType type, ReduceOp op,
                                            std::string_view what) {
  const std::string description = describe("all_reduce", what, count, type);
  const int n = checked_count(count, description);
  MPI_Comm comm = impl_->comm;
  return run_on(stream, *impl_, "all_reduce", description, timeout(),
                order_check() ? check_text(description, true) : std::string(), [=](MPI_Request* r) {
                  return MPI_Iallreduce(send, recv, n, mpi_type(type), mpi_op(op), comm, r);
                });
}

Future<void> MpiCommunicator::do_all_gather(Stream& stream, const void* send, void* recv,
                                            std::size_t count, DataType type,
                                            std::string_view what) {
  const std::string description = describe("all_gather", what, count, type);
  const int n = checked_count(count, description);
  MPI_Comm comm = impl_->comm;
  return run_on(stream, *impl_, "all_gather", description, timeout(),
                order_check() ? check_text(description, true) : std::string(), [=](MPI_Request* r) {
                  return MPI_Iallgather(send, n, mpi_type(type), recv, n, mpi_type(type), comm, r);
                });
}

Future<void> MpiCommunicator::do_all_to_all(Stream& stream, const void* send, void* recv,
                                            std::size_t count, DataType type,
                                            std::string_view what) {
  const std::string description = describe("all_to_all", what, count, type);
  const int n = checked_count(count, description);
  MPI_Comm comm = impl_->comm;
  return run_on(stream, *impl_, "all_to_all", description, timeout(),
                order_check() ? check_text(description, true) : std::string(), [=](MPI_Request* r) {
                  return MPI_Ialltoall(send, n, mpi_type(type), recv, n, mpi_type(type), comm, r);
                });
}

namespace {

// all_to_all_v's counts and displacements (prefix sums) as MPI's ints: send counts, send
// displacements, receive counts, receive displacements, one per rank each.
std::vector<int> mpi_counts(std::span<const std::size_t> send_counts,
                            std::span<const std::size_t> recv_counts,
                            const std::string& description) {
  const std::size_t ranks = send_counts.size();
  std::vector<int> counts(4 * ranks);
  std::size_t send_at = 0;
  std::size_t recv_at = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    counts[r] = checked_count(send_counts[r], description);
    counts[ranks + r] = checked_count(send_at, description);
    counts[2 * ranks + r] = checked_count(recv_counts[r], description);
    counts[3 * ranks + r] = checked_count(recv_at, description);
    send_at += send_counts[r];
    recv_at += recv_counts[r];
  }
  return counts;
}

}  // namespace

Future<void> MpiCommunicator::do_all_to_all_v(Stream& stream, const void* send,
                                              std::span<const std::size_t> send_counts, void* recv,
                                              std::span<const std::size_t> recv_counts,
                                              DataType type, std::string_view what) {
  const std::string description = describe("all_to_all_v", what, total(send_counts), type);
  const auto ranks = static_cast<std::size_t>(size());
  require(send_counts.size() == ranks && recv_counts.size() == ranks, "all_to_all_v", what,
          "one send count and one receive count per rank");
  // Owned by the queued operation: MPI reads them until it completed.
  std::vector<int> counts = mpi_counts(send_counts, recv_counts, description);
  MPI_Comm comm = impl_->comm;
  return run_on(stream, *impl_, "all_to_all_v", description, timeout(),
                order_check() ? check_text(description, false) : std::string(),
                [=, counts = std::move(counts)](MPI_Request* r) {
                  const int* c = counts.data();
                  return MPI_Ialltoallv(send, c, c + ranks, mpi_type(type), recv, c + 2 * ranks,
                                        c + 3 * ranks, mpi_type(type), comm, r);
                });
}

Future<void> MpiCommunicator::do_all_to_all_v_later(Stream& stream,
                                                    std::function<AllToAllVBuffers()> when_started,
                                                    DataType type, std::string_view what) {
  // The count is not known yet: errors and the order check name the operation without it.
  const std::string description = describe("all_to_all_v", what, 0, type);
  const std::string named =
      description.substr(0, description.rfind(" (")) + " (" + std::string(name_of(type)) + ")";
  MPI_Comm comm = impl_->comm;
  const auto ranks = static_cast<std::size_t>(size());
  // The counts live in the queued operation (MPI reads them until it completed).
  auto counts = std::make_shared<std::vector<int>>();
  return run_on(stream, *impl_, "all_to_all_v", named, timeout(),
                order_check() ? check_text(description, false) : std::string(),
                [this, when_started = std::move(when_started), counts, named, ranks, type,
                 comm](MPI_Request* r) {
                  const AllToAllVBuffers b = when_started();
                  require_counts(b, named);
                  *counts = mpi_counts(b.send_counts, b.recv_counts, named);
                  const int* c = counts->data();
                  return MPI_Ialltoallv(b.send, c, c + ranks, mpi_type(type), b.recv, c + 2 * ranks,
                                        c + 3 * ranks, mpi_type(type), comm, r);
                });
}

Future<void> MpiCommunicator::do_send(Stream& stream, const void* data, std::size_t count,
                                      DataType type, int peer, std::string_view what) {
  const std::string description =
      describe("send to rank " + std::to_string(peer), what, count, type);
  require(peer >= 0 && peer < size(), "send", what,
          "peer " + std::to_string(peer) + " is not a rank of this communicator");
  const int n = checked_count(count, description);
  MPI_Comm comm = impl_->comm;
  return run_on(stream, *impl_, "send", description, timeout(), std::string(), [=](MPI_Request* r) {
    return MPI_Isend(data, n, mpi_type(type), peer, 0, comm, r);
  });
}

Future<void> MpiCommunicator::do_recv(Stream& stream, void* data, std::size_t count, DataType type,
                                      int peer, std::string_view what) {
  const std::string description =
      describe("recv from rank " + std::to_string(peer), what, count, type);
  require(peer >= 0 && peer < size(), "recv", what,
          "peer " + std::to_string(peer) + " is not a rank of this communicator");
  const int n = checked_count(count, description);
  MPI_Comm comm = impl_->comm;
  return run_on(stream, *impl_, "recv", description, timeout(), std::string(), [=](MPI_Request* r) {
    return MPI_Irecv(data, n, mpi_type(type), peer, 0, comm, r);
  });
}

std::unique_ptr<Communicator> MpiCommunicator::split(std::span<const int> ranks) {
  std::set<int> seen;
  bool member = false;
  for (int r : ranks) {
    require(r >= 0 && r < size(), "split", {},
            "rank " + std::to_string(r) + " is not a rank of this communicator");
    require(seen.insert(r).second, "split", {}, "rank " + std::to_string(r) + " is listed twice");
    member = member || r == rank();
  }
  require(member, "split", {}, "only the ranks in the list call split (this one is not in it)");
  MPI_Group all = MPI_GROUP_NULL;
  MPI_Group sub = MPI_GROUP_NULL;
  MPI_Comm_group(impl_->comm, &all);
  MPI_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &sub);
  auto impl = std::make_unique<Impl>();
  const int rc = MPI_Comm_create_group(impl_->comm, sub, 0, &impl->comm);
  MPI_Group_free(&sub);
  MPI_Group_free(&all);
  if (rc != MPI_SUCCESS)
    throw CommError(
        rank(), "split",
        "rank " + std::to_string(rank()) + ": MPI_Comm_create_group failed: " + mpi_error(rc));
  MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(impl->comm, &impl->rank);
  MPI_Comm_size(impl->comm, &impl->size);
  auto group = std::make_unique<MpiCommunicator>(std::move(impl));
  group->set_timeout(timeout());
  return group;
}

}  // namespace swp
