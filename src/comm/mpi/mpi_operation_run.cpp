// One MPI operation's run on its stream (detail::run_operation): MpiOperationRun takes the
// operation's turn, checks the order, starts it and tests it until it ended.

#include "mpi_operation_run.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../abort_state.hpp"
#include "../order_check.hpp"
#include "mpi_error.hpp"

namespace swp {

namespace {

using detail::mpi_error;
using SteadyClock = std::chrono::steady_clock;

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
    if (waited == Waited::done && detail::same_everywhere(all, mine)) return true;
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

}  // namespace

void detail::run_operation(MpiCommunicator::Impl& impl, MpiPendingOp& op,
                           std::chrono::milliseconds timeout, const std::string& check,
                           const std::function<int(MPI_Request*)>& start) {
  MpiOperationRun(impl, op, timeout).run(check, start);
}

}  // namespace swp
