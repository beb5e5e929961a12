#include "swp/comm/mpi/mpi_communicator.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
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

#include "../abort_state.hpp"
#include "../order_check.hpp"
#include "mpi_abort_channel.hpp"
#include "mpi_error.hpp"
#include "mpi_impl.hpp"
#include "mpi_operation_run.hpp"
#include "split_agreement.hpp"
#include "swp/device/stream.hpp"

namespace swp {

namespace {

using detail::mpi_error;
using SteadyClock = std::chrono::steady_clock;

// Communicators destroyed with operations that timed out still under way (see ~MpiSession).
std::atomic<int>& abandoned_operations() {
  static std::atomic<int> count{0};
  return count;
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
  // Operations an abort left under way (MpiCommunicator::~MpiCommunicator: their
  // communicators are not freed) do not stop MPI_Finalize: Open MPI 4.1 finalizes with them
  // pending (the MPI tests' abort cases end so, every rank exiting 0). Operations that timed
  // out without an abort are another matter: a rank may still be inside them.
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

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  // Aborts together with its world and the world's other groups (the channel's state).
  impl_->aborts = impl_->channel->state();
  adopt_abort_state(impl_->aborts);
  impl_->abort_listener = impl_->aborts->listen(
      [impl = impl_.get()](const detail::AbortState::Info&, bool) { impl->fail_pending(); });
}

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
  try {
    impl->channel = std::make_shared<detail::MpiAbortChannel>(impl->comm, impl->rank, impl->size);
  } catch (...) {
    MPI_Comm_free(&impl->comm);
    throw;
  }
  return std::make_unique<MpiCommunicator>(std::move(impl));
}

MpiCommunicator::~MpiCommunicator() {
  impl_->aborts->unlisten(impl_->abort_listener);
  // An operation that timed out may still complete (a late rank): wait for it once more —
  // unless the communicator was aborted (before or meanwhile): then no rank that has not
  // joined it yet ever will, and nothing is waited for.
  bool clean = true;
  {
    std::lock_guard lock(impl_->mutex);
    const auto deadline = SteadyClock::now() +
                          std::max<std::chrono::milliseconds>(timeout(), std::chrono::seconds(10));
    for (Impl::UnderWay& under_way : impl_->timed_out) {
      int done = 0;
      while (!impl_->aborted() &&
             MPI_Test(&under_way.request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0 &&
             SteadyClock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      clean = clean && done != 0;
    }
    clean = clean && impl_->dead.empty();
  }
  // What keep_until_done kept goes now where its operations ended; what MPI may still write
  // stays until the process ends.
  impl_->let_go(/*forever=*/true);
  // An operation still under way keeps its communicator: freeing it would be erroneous (Open
  // MPI crashes in MPI_Finalize, seen). Left by an abort, it does not keep MPI_Finalize from
  // running (see ~MpiSession); timed out without one, it does.
  // An aborted communicator is kept too (one handle, as the abort channel's): the other ranks'
  // parts of operations this rank never joined may still be on their way here, and once its
  // context id were free MPI would hand them to the next communicator given that id — Open MPI
  // then reads their senders' ranks against the new one's members (a group of 2 receiving
  // rank 3's fragment: SIGSEGV in mca_pml_ob1_add_comm, in MPI_Comm_create_group of a split
  // after an abort, seen at 4 ranks).
  if (clean && !impl_->aborted() && impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  if (!clean && !impl_->aborted()) abandoned_operations().fetch_add(1, std::memory_order_relaxed);
}

int MpiCommunicator::rank() const noexcept { return impl_->rank; }
int MpiCommunicator::size() const noexcept { return impl_->size; }

namespace {

// Queues the operation on `stream` (see detail::run_operation); an abort fails it at once, even
// while it waits in the stream's queue.
Future<void> run_on(Stream& stream, MpiCommunicator::Impl& impl, std::string op,
                    std::string description, std::chrono::milliseconds timeout, std::string check,
                    std::function<int(MPI_Request*)> start) {
  // The ticket and the place in the stream's queue, taken together (see Impl::call_mutex).
  // Not held past the enqueue: an abort below runs listeners that may resume waiters, which
  // may call again.
  std::unique_lock call(impl.call_mutex);
  std::shared_ptr<MpiPendingOp> pending = impl.enlist(std::move(op), std::move(description));
  Future<void> future = pending->promise.get_future();
  try {
    stream.enqueue([&impl, pending, timeout, check = std::move(check), start = std::move(start)] {
      struct Discharge {  // also when the run throws (out of memory naming an error)
        MpiCommunicator::Impl& impl;
        const MpiPendingOp& op;
        ~Discharge() { impl.discharge(op); }
      } discharge{impl, *pending};
      detail::run_operation(impl, *pending, timeout, check, start);
    });
  } catch (...) {
    call.unlock();
    // Not queued, but it took its place in the call order: the operations called after it
    // would wait for its turn, and the peers' part of it would pair with this rank's next
    // operation. So its turn is given up and the communicator aborted, as for an operation
    // that fails as it starts; the caller gets the stream's exception.
    const std::string reason = pending->description + " could not be queued on stream '" +
                               stream.name() + "': " + detail::message_of(std::current_exception());
    pending->claim();  // its future is not returned: the abort leaves it be
    impl.discharge(*pending);
    impl.give_up_turn(pending->ticket);
    impl.abort(reason);
    throw;
  }
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
                order_check() ? detail::check_text(description, true) : std::string(),
                [=](MPI_Request* r) {
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
                order_check() ? detail::check_text(description, true) : std::string(),
                [=](MPI_Request* r) {
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
                order_check() ? detail::check_text(description, true) : std::string(),
                [=](MPI_Request* r) {
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
                order_check() ? detail::check_text(description, false) : std::string(),
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
                order_check() ? detail::check_text(description, false) : std::string(),
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

void MpiCommunicator::keep_until_done(std::shared_ptr<const void> owner) {
  if (!owner) return;
  std::uint64_t before = 0;
  {
    std::lock_guard lock(impl_->turn_mutex);
    before = impl_->next_ticket;
  }
  {
    std::lock_guard lock(impl_->mutex);
    impl_->kept.push_back({before, std::move(owner)});
    impl_->keeping.store(true, std::memory_order_relaxed);
  }
  impl_->let_go();  // at once where they all ended already
}

namespace {

// "[0, 2, 3]"
std::string rank_list(const std::vector<int>& ranks) {
  std::string s = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return s + "]";
}

}  // namespace

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
  const std::vector<int> members(ranks.begin(), ranks.end());
  const std::string description =
      "rank " + std::to_string(rank()) + ": split of ranks " + rank_list(members);
  if (aborted())
    std::rethrow_exception(abort_state()->error(rank(), "split", description, "was not run"));
  std::uint64_t attempt = 0;
  {
    std::lock_guard lock(impl_->splits_mutex);
    attempt = impl_->split_attempts[members]++;
  }
  {
    detail::SplitAgreement agreement(
        impl_->comm, rank(), members,
        detail::text_hash(std::string_view(reinterpret_cast<const char*>(members.data()),
                                           members.size() * sizeof(int))),
        attempt);
    impl_->channel->op_started();  // an abort is seen within a millisecond meanwhile
    const detail::SplitAgreement::Outcome outcome = agreement.run(timeout(), *impl_->aborts);
    impl_->channel->op_ended();
    switch (outcome) {
      case detail::SplitAgreement::Outcome::ready:
        break;
      case detail::SplitAgreement::Outcome::timed_out:
        throw CommTimeout(
            rank(), "split",
            description + " did not complete in " + std::to_string(timeout().count()) +
                " ms: rank(s) " + rank_list(agreement.missing()) +
                (agreement.confirming() ? " called split but did not confirm it"
                                        : " did not call split (every listed rank must)"));
      case detail::SplitAgreement::Outcome::gave_up:
        throw CommError(rank(), "split",
                        description + " was not run: rank " +
                            std::to_string(agreement.gave_up_by().front()) +
                            " gave up on it (a listed rank did not call split by its deadline)");
      case detail::SplitAgreement::Outcome::aborted:
        std::rethrow_exception(abort_state()->error(rank(), "split", description, "was not run"));
      case detail::SplitAgreement::Outcome::failed:
        throw CommError(rank(), "split",
                        description + " failed: MPI refused its agreement's messages");
    }
  }
  // Every listed rank called split and is about to create the group: the blocking creation.
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
  impl->channel = impl_->channel;  // aborts with its world
  auto group = std::make_unique<MpiCommunicator>(std::move(impl));
  group->set_timeout(timeout());
  return group;
}

}  // namespace swp
