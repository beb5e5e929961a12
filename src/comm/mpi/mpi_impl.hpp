#pragma once
// MpiCommunicator's state (libswp-mpi's private header): the MPI communicator, its operations
// from their call until their streams ran them (MpiPendingOp) and the call order they start in,
// what timed out or an abort left under way in MPI, what keep_until_done keeps, and the abort
// channel shared with its world.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../abort_state.hpp"
#include "mpi_abort_channel.hpp"
#include "mpi_error.hpp"
#include "swp/async/future.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"

namespace swp {

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

}  // namespace swp
