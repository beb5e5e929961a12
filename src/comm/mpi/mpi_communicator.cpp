#include "swp/comm/mpi/mpi_communicator.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
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

// An operation from its call until its stream ran it: the promise is completed once, by the
// stream's run of it or by an abort failing it at once (whichever claims it first).
struct MpiPendingOp {
  Promise<void> promise;
  std::atomic<bool> completed{false};
  std::uint64_t ticket = 0;  // its place in the call order
  std::string op;
  std::string description;

  bool claim() noexcept { return !completed.exchange(true, std::memory_order_acq_rel); }
};

struct MpiCommunicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::shared_ptr<detail::MpiAbortChannel> channel;  // the world's, shared with its groups
  std::shared_ptr<detail::AbortState> aborts;        // the channel's
  std::uint64_t abort_listener = 0;
  // A request MPI still has after its operation's future failed, and the operation's ticket.
  struct UnderWay {
    MPI_Request request = MPI_REQUEST_NULL;  // MPI_REQUEST_NULL once a test saw it complete
    std::uint64_t ticket = 0;
  };
  // What keep_until_done keeps: `owner` until the operations with tickets below `before` ended.
  struct Kept {
    std::uint64_t before = 0;
    std::shared_ptr<const void> owner;
  };
  std::mutex mutex;                 // the fields below
  std::vector<UnderWay> timed_out;  // operations that outlived their timeout
  std::vector<UnderWay> dead;       // operations under way when the communicator aborted
  std::vector<Kept> kept;
  // !kept.empty(), which discharge looks at without the lock. Relaxed: an owner kept while an
  // operation was pending was added before its let_go took ops_mutex, which the discharge of
  // that operation takes after it.
  std::atomic<bool> keeping{false};

  std::mutex ops_mutex;                                        // ops
  std::map<std::uint64_t, std::shared_ptr<MpiPendingOp>> ops;  // by ticket, until run

  std::mutex splits_mutex;                                   // split_attempts
  std::map<std::vector<int>, std::uint64_t> split_attempts;  // splits of each list called so far

  [[nodiscard]] bool aborted() const noexcept { return aborts->aborted(); }
  // This rank aborts the communicator (and those it aborts with), as Communicator::abort.
  void abort(std::string reason) noexcept { aborts->abort_here(rank, std::move(reason)); }

  // A new operation, in the call order and among the pending ones.
  std::shared_ptr<MpiPendingOp> enlist(std::string op, std::string description) {
    auto pending = std::make_shared<MpiPendingOp>();
    pending->ticket = take_ticket();
    pending->op = std::move(op);
    pending->description = std::move(description);
    {
      std::lock_guard lock(ops_mutex);
      ops.emplace(pending->ticket, pending);
    }
    channel->op_started();
    // Aborted after the caller looked and before the op was listed: the abort's fail_pending
    // may not have seen it.
    if (aborted()) fail_aborted(*pending);
    return pending;
  }
  void discharge(const MpiPendingOp& pending) {
    {
      std::lock_guard lock(ops_mutex);
      ops.erase(pending.ticket);
    }
    channel->op_ended();
    if (keeping.load(std::memory_order_relaxed)) let_go();
  }

  // Lets go of the owners kept (keep_until_done) whose operations all ended: none is still
  // pending (listed in ops) or under way in MPI (a request of timed_out or dead that a test
  // does not see complete). The owners are destroyed last, without a lock (they may hold
  // anything). `forever`: what is left stays until the process ends (the communicator goes).
  void let_go(bool forever = false) {
    std::vector<std::shared_ptr<const void>> done;
    {
      std::lock_guard lock(mutex);
      if (kept.empty()) return;
      std::uint64_t oldest = UINT64_MAX;  // the oldest ticket whose operation has not ended
      for (std::vector<UnderWay>* list : {&timed_out, &dead})
        for (UnderWay& u : *list) {
          int complete = 0;
          if (u.request != MPI_REQUEST_NULL &&
              (MPI_Test(&u.request, &complete, MPI_STATUS_IGNORE) != MPI_SUCCESS || complete == 0))
            oldest = std::min(oldest, u.ticket);
        }
      {
        std::lock_guard ops_lock(ops_mutex);
        if (!ops.empty()) oldest = std::min(oldest, ops.begin()->first);
      }
      std::erase_if(kept, [&](Kept& k) {
        if (k.before > oldest) return false;
        done.push_back(std::move(k.owner));
        return true;
      });
      if (forever) {
        static std::mutex kept_mutex;
        static auto* until_exit = new std::vector<std::shared_ptr<const void>>();
        std::lock_guard kept_lock(kept_mutex);
        for (Kept& k : kept) until_exit->push_back(std::move(k.owner));
        kept.clear();
      }
      keeping.store(!kept.empty(), std::memory_order_relaxed);
    }
  }
  void fail_aborted(MpiPendingOp& pending) {
    if (pending.claim())
      pending.promise.set_error(aborts->error(rank, pending.op, pending.description, "failed"));
  }
  // The abort's part here (a listener of `aborts`): every pending operation fails at once,
  // those waiting for their turn stop waiting; operations under way in MPI are left to their
  // streams, which see the abort within their next look (at most 1 ms) and give them up.
  // The errors are made first and the promises completed last, touching only locals then: a
  // waiter resumed here may destroy this communicator (even the world's last one).
  void fail_pending() {
    std::vector<std::pair<std::shared_ptr<MpiPendingOp>, std::exception_ptr>> failing;
    {
      std::lock_guard lock(ops_mutex);
      for (auto& [ticket, op] : ops) failing.emplace_back(op, nullptr);
    }
    for (auto& [op, error] : failing)
      error = aborts->error(rank, op->op, op->description, "failed");
    {
      std::lock_guard lock(turn_mutex);  // a waiter between its look and its wait sees it
    }
    turn_changed.notify_all();
    for (auto& [op, error] : failing)  // outside the lock: waiters may resume here
      if (op->claim()) op->promise.set_error(std::move(error));
  }

  // Operations start in MPI in the order they were called (their tickets), whichever streams
  // they are on: the call order is what the ranks agree on (the engines' globally ordered
  // tasks call in the same order on every rank), not the order the streams get to them.
  // A call holds call_mutex from taking its ticket until its stream queued it (run_on), so
  // that on any one stream the tickets are queued in increasing order: two threads calling on
  // one stream could otherwise queue the later ticket first, whose run then waits on the
  // stream's thread for a turn that is queued behind it — until its timeout, on every rank.
  std::mutex call_mutex;
  std::mutex turn_mutex;  // the fields below
  std::condition_variable turn_changed;
  std::uint64_t next_ticket = 0;
  std::uint64_t turn = 0;            // the ticket that starts next
  std::set<std::uint64_t> given_up;  // tickets that timed out before their turn came

  std::uint64_t take_ticket() {
    std::lock_guard lock(turn_mutex);
    return next_ticket++;
  }
  // A ticket whose operation will never run: its turn passes now, or as soon as it comes.
  void give_up_turn(std::uint64_t ticket) {
    std::lock_guard lock(turn_mutex);
    if (turn == ticket) {
      pass_turn();
    } else {
      given_up.insert(ticket);
    }
  }
  // With turn_mutex held, by the operation whose turn it was.
  void pass_turn() {
    ++turn;
    while (given_up.erase(turn) > 0) ++turn;
    turn_changed.notify_all();
  }
};

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
  if (clean && impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  if (!clean && !impl_->aborted()) abandoned_operations().fetch_add(1, std::memory_order_relaxed);
}

int MpiCommunicator::rank() const noexcept { return impl_->rank; }
int MpiCommunicator::size() const noexcept { return impl_->size; }

namespace {

enum class Waited { done, failed, timed_out, aborted };

// Tests `request` with a bounded back-off — a few quick looks (a collective whose peers are
// there completes in microseconds), then sleeps doubling to 1 ms — until it completed, failed
// (`rc`), `deadline` passed or the communicator was aborted (a rank that will never join it).
Waited wait_for(MPI_Request& request, SteadyClock::time_point deadline, int& rc,
                const detail::AbortState& aborts) {
  auto pause = std::chrono::microseconds(1);
  for (int polls = 0;; ++polls) {
    int done = 0;
    rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return Waited::failed;
    if (done != 0) return Waited::done;
    if (aborts.aborted()) return Waited::aborted;
    if (SteadyClock::now() >= deadline) return Waited::timed_out;
    if (polls < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
}

// One operation as its stream runs it: when its turn came (the call order), the order check
// when asked for, the start, the tests until it completed, then its promise — unless an abort
// failed it first (MpiPendingOp::claim), in which case what is under way in MPI is given up.
class MpiOperationRun {
 public:
  MpiOperationRun(MpiCommunicator::Impl& impl, MpiPendingOp& op, std::chrono::milliseconds timeout)
      : impl_(impl), op_(op), timeout_(timeout), deadline_(SteadyClock::now() + timeout) {}

  // `check`: what this rank runs, as the ranks compare it (empty: no order check). `start`
  // starts the operation and returns an MPI error code.
  void run(const std::string& check, const std::function<int(MPI_Request*)>& start) {
    if (impl_.aborted()) return give_up(MPI_REQUEST_NULL);
    std::unique_lock lock(impl_.turn_mutex);
    if (!take_turn(lock)) return;
    if (!check.empty() && !check_order(lock, check)) return;
    if (impl_.aborted()) {
      impl_.pass_turn();
      lock.unlock();
      return give_up(MPI_REQUEST_NULL);
    }
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    std::exception_ptr not_started;
    try {
      rc = start(&request);
    } catch (...) {  // anything: the turn must pass and the future complete
      not_started = start_error();
    }
    if (not_started) return abandon(lock, std::move(not_started));
    if (rc != MPI_SUCCESS) return abandon(lock, error(" failed: " + mpi_error(rc)));
    impl_.pass_turn();
    lock.unlock();
    switch (wait_for(request, deadline_, rc, *impl_.aborts)) {
      case Waited::done:
        if (op_.claim()) op_.promise.set_value();
        return;
      case Waited::failed:
        return fail(" failed: " + mpi_error(rc));
      case Waited::timed_out:
        return time_out(request, "");
      case Waited::aborted:
        return give_up(request);
    }
  }

 private:
  // With turn_mutex held: waits for this operation's turn; false when it failed instead
  // (timed out, or aborted), the lock released.
  bool take_turn(std::unique_lock<std::mutex>& lock) {
    const bool mine = impl_.turn_changed.wait_until(
        lock, deadline_, [&] { return impl_.turn == op_.ticket || impl_.aborted(); });
    if (mine && impl_.turn == op_.ticket && !impl_.aborted()) return true;
    if (impl_.turn == op_.ticket) {
      impl_.pass_turn();
    } else {
      impl_.given_up.insert(op_.ticket);
    }
    lock.unlock();
    if (impl_.aborted()) {
      give_up(MPI_REQUEST_NULL);
    } else {
      fail_with(std::make_exception_ptr(CommTimeout(
          impl_.rank, op_.op,
          op_.description + " did not start in " + std::to_string(timeout_.count()) +
              " ms: an operation called before it on this communicator (on another stream) "
              "has not started")));
    }
    return false;
  }

  // With the turn held: the order check's all_gather; false when the ranks' operations differ
  // or it failed, the turn passed and the lock released.
  bool check_order(std::unique_lock<std::mutex>& lock, const std::string& check) {
    // The turn stays this operation's until it started (or failed): the check's own
    // all_gather is the communicator's next operation on every rank.
    const detail::OpDescriptor mine = detail::descriptor_of(check);
    std::vector<detail::OpDescriptor> all(static_cast<std::size_t>(impl_.size));
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE,
                            impl_.comm, &request);
    Waited waited = Waited::failed;
    if (rc == MPI_SUCCESS) {
      lock.unlock();  // other operations only wait for their turn meanwhile
      waited = wait_for(request, deadline_, rc, *impl_.aborts);
      lock.lock();
    }
    if (waited == Waited::done &&
        detail::same_everywhere(all, mine))
      return true;
    impl_.pass_turn();
    lock.unlock();
    switch (waited) {
      case Waited::done:
        fail(detail::order_mismatch(all));
        break;
      case Waited::failed:
        fail(" failed (its order check): " + mpi_error(rc));
        break;
      case Waited::timed_out:
        time_out(request, " (its order check)");
        break;
      case Waited::aborted:
        give_up(request);
        break;
    }
    return false;
  }

  // In the catch of what `start` threw: the operation's error — a CommError as it is, any
  // other exception a CommError naming the operation.
  std::exception_ptr start_error() const {
    try {
      throw;
    } catch (const CommError&) {
      return std::current_exception();
    } catch (const std::exception& e) {
      return error(std::string(" failed as it started: ") + e.what());
    } catch (...) {
      return error(" failed as it started: it threw an exception not derived from std::exception");
    }
  }

  // With the turn held: the operation failed on this rank after taking its place in the call
  // order, and MPI never got it. The peers' part of it would pair with this rank's next
  // operation on the communicator (another operation's data in their buffers, silently), so
  // the communicator is aborted with this error — every rank's pending and later operations
  // fail with CommAborted naming this rank and the operation — before the turn passes (no
  // later operation of this rank starts meanwhile). The operation itself fails with `error`.
  void abandon(std::unique_lock<std::mutex>& lock, std::exception_ptr error) {
    const bool mine = op_.claim();  // before the abort, which would fail it with CommAborted
    lock.unlock();                  // the abort's listener (fail_pending) takes turn_mutex
    impl_.abort(detail::message_of(error));
    lock.lock();
    impl_.pass_turn();
    lock.unlock();
    if (mine) op_.promise.set_error(std::move(error));
  }

  std::exception_ptr error(const std::string& message) const {
    return std::make_exception_ptr(CommError(impl_.rank, op_.op, op_.description + message));
  }
  void fail_with(std::exception_ptr error) {
    if (op_.claim()) op_.promise.set_error(std::move(error));
  }
  void fail(const std::string& message) { fail_with(error(message)); }
  void time_out(MPI_Request request, const std::string& what) {
    {
      std::lock_guard lock(impl_.mutex);
      impl_.timed_out.push_back({request, op_.ticket});
    }
    fail_with(std::make_exception_ptr(CommTimeout(
        impl_.rank, op_.op,
        op_.description + " did not complete" + what + " in " + std::to_string(timeout_.count()) +
            " ms: a rank did not take part (it failed, or issued its operations on this "
            "communicator in another order)")));
  }
  // The communicator was aborted: the operation fails with CommAborted (unless the abort
  // failed it already), and `request` (if it started) is withdrawn where MPI can (a receive),
  // else left with the communicator, which is then never freed (a collective: MPI cannot
  // withdraw one, and some rank will never join it).
  void give_up(MPI_Request request) {
    if (request != MPI_REQUEST_NULL && !withdrawn(request)) {
      std::lock_guard lock(impl_.mutex);
      impl_.dead.push_back({request, op_.ticket});
    }
    impl_.fail_aborted(op_);
  }
  // MPI_Cancel of a receive (completes at once: cancelled, or matched meanwhile).
  bool withdrawn(MPI_Request& request) const {
    if (op_.op != "recv" || MPI_Cancel(&request) != MPI_SUCCESS) return false;
    int done = 0;
    for (int polls = 0; polls < 1000 && done == 0; ++polls)
      if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    return done != 0;
  }

  MpiCommunicator::Impl& impl_;
  MpiPendingOp& op_;
  const std::chrono::milliseconds timeout_;
  const SteadyClock::time_point deadline_;
};

// Queues the operation on `stream` (see MpiOperationRun); an abort fails it at once, even
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
      struct Discharge {  // also when run() throws (out of memory naming an error)
        MpiCommunicator::Impl& impl;
        const MpiPendingOp& op;
        ~Discharge() { impl.discharge(op); }
      } discharge{impl, *pending};
      MpiOperationRun(impl, *pending, timeout).run(check, start);
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
