#pragma once
// MpiAbortChannel: how an abort on one rank reaches the others (the MPI backend's, not for
// direct use; MpiCommunicator holds one per world()).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../abort_state.hpp"
#include "mpi_error.hpp"

namespace swp::detail {

// An abort message: which world() it is for (see MpiAbortChannel), and the reason,
// NUL-terminated. 1 KiB: small enough for every MPI's eager protocol, so a send completes
// without the receiver (which may be busy, or gone).
struct MpiAbortMessage {
  std::uint64_t generation = 0;
  char reason[1016] = {};
};
static_assert(sizeof(MpiAbortMessage) == 1024);

// How an abort reaches the other ranks: one per world(), shared by every group split from it.
// A control communicator (a duplicate of the world's: abort messages never meet collectives),
// a receive always posted on it for any rank's abort message, and a thread polling that receive
// — every 1 ms while an operation of the world or its groups is pending (one that will never
// complete is what an abort must fail), every 20 ms otherwise (an MPI receive cannot be waited
// for without polling: MPI_Wait would spin a core). abort() sends the message to every other
// rank, nonblocking, on the thread calling it.
class MpiAbortChannel {
 public:
  MpiAbortChannel(MPI_Comm world, int rank, int size);
  ~MpiAbortChannel();
  MpiAbortChannel(const MpiAbortChannel&) = delete;
  MpiAbortChannel& operator=(const MpiAbortChannel&) = delete;

  [[nodiscard]] const std::shared_ptr<AbortState>& state() const noexcept { return state_; }
  // An operation of a communicator of this channel is pending (until op_ended): poll often,
  // from now on (an abort may arrive right away: the thread may be in an idle pause).
  void op_started() {
    if (active_.fetch_add(1, std::memory_order_relaxed) > 0) return;
    std::lock_guard lock(mutex_);
    look_now_ = true;
    wake_.notify_all();
  }
  void op_ended() noexcept { active_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  void send_to_peers(const AbortState::Info& info);
  void run();
  void post_receive();
  void poll_incoming();
  void poll_outgoing();

  MPI_Comm control_ = MPI_COMM_NULL;
  const int rank_;
  const int size_;
  const std::uint64_t generation_;  // which world() this is (see MpiAbortMessage)
  const std::shared_ptr<AbortState> state_;
  std::uint64_t listener_ = 0;
  std::atomic<int> active_{0};  // pending operations (relaxed: only the polling pace)

  // The progress thread's alone (the destructor's once it was joined, or when it runs on that
  // thread).
  MPI_Request incoming_ = MPI_REQUEST_NULL;
  MpiAbortMessage inbox_;
  bool* destroyed_ = nullptr;  // run()'s flag: set by a destructor running on the thread itself

  std::mutex mutex_;  // the fields below
  std::condition_variable wake_;
  bool stopping_ = false;
  bool look_now_ = false;              // sends to progress, or a first operation pending: no pause
  MpiAbortMessage outbox_;             // this rank's abort message (it aborts once)
  std::vector<MPI_Request> outgoing_;  // its sends, until they completed
  std::thread thread_;
};

}  // namespace swp::detail
