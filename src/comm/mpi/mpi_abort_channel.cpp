// MpiAbortChannel: a control communicator per world(), a receive always posted on it, and a
// thread polling it (mpi_abort_channel.hpp).

#include "mpi_abort_channel.hpp"

#include <chrono>
#include <cstring>
#include <string>

#include "swp/comm/communicator.hpp"

namespace swp::detail {

namespace {

using SteadyClock = std::chrono::steady_clock;

// The tag of abort messages on an abort channel's control communicator (nothing else travels
// there).
constexpr int mpi_abort_tag = 1;

// world() is collective, so its n-th call is the same world on every rank.
std::uint64_t next_world_generation() {
  static std::atomic<std::uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

MpiAbortChannel::MpiAbortChannel(MPI_Comm world, int rank, int size)
    : rank_(rank),
      size_(size),
      generation_(next_world_generation()),
      state_(std::make_shared<AbortState>(rank)) {
  if (const int rc = MPI_Comm_dup(world, &control_); rc != MPI_SUCCESS)
    throw CommError(rank, "MPI_Comm_dup",
                    "rank " + std::to_string(rank) +
                        ": MPI_Comm_dup (the abort channel) failed: " + mpi_error(rc));
  MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
  post_receive();
  listener_ = state_->listen([this](const AbortState::Info& info, bool local) {
    if (local) send_to_peers(info);  // a peer's abort: its rank told everyone
  });
  thread_ = std::thread([this] { run(); });
}

MpiAbortChannel::~MpiAbortChannel() {
  state_->unlisten(listener_);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.get_id() == std::this_thread::get_id()) {
    // Destroyed on its own thread: inside an abort's listeners (poll_incoming's trigger), a
    // waiter resumed there let go of the world's last communicator. That thread cannot be
    // joined; it ends on its own, touching nothing of this object once trigger returned
    // (run() sees *destroyed_), and owns incoming_ meanwhile as ever.
    *destroyed_ = true;
    thread_.detach();
  } else {
    thread_.join();
  }
  // Bounded: a receive is withdrawn at once, and a 1 KiB send completes without its receiver.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(1);
  const auto settle = [&](MPI_Request& request) {
    int done = 0;
    while (MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0 &&
           SteadyClock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    return done != 0;
  };
  bool settled = true;
  if (incoming_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&incoming_);
    settled = settle(incoming_);
  }
  for (MPI_Request& request : outgoing_) settled = settle(request) && settled;
  // After an abort another rank's message may still be on its way here: the communicator is
  // kept (one handle) rather than freed, so that MPI never delivers it to a later world's
  // channel reusing its context id.
  if (settled && !state_->aborted()) MPI_Comm_free(&control_);
}

void MpiAbortChannel::post_receive() {
  if (MPI_Irecv(&inbox_, sizeof inbox_, MPI_BYTE, MPI_ANY_SOURCE, mpi_abort_tag, control_,
                &incoming_) != MPI_SUCCESS)
    incoming_ = MPI_REQUEST_NULL;  // not listening: peers' aborts reach this rank by timeouts
}

void MpiAbortChannel::send_to_peers(const AbortState::Info& info) {
  std::lock_guard lock(mutex_);
  outbox_.generation = generation_;
  const std::size_t room = sizeof outbox_.reason - 1;
  std::string reason = info.reason;
  if (reason.size() > room) reason = reason.substr(0, room - 3) + "...";
  std::memcpy(outbox_.reason, reason.data(), reason.size());
  outbox_.reason[reason.size()] = '\0';
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Isend(&outbox_, sizeof outbox_, MPI_BYTE, peer, mpi_abort_tag, control_, &request) ==
        MPI_SUCCESS)
      outgoing_.push_back(request);
  }
  // Open MPI moves a message on only while some call progresses it: a look now, and the
  // thread keeps looking every 1 ms until they completed.
  poll_outgoing();
  look_now_ = true;
  wake_.notify_all();
}

void MpiAbortChannel::run() {
  bool destroyed = false;  // on this stack: the channel may go while poll_incoming runs
  destroyed_ = &destroyed;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    poll_outgoing();
    lock.unlock();
    poll_incoming();
    if (destroyed) return;  // `lock` holds nothing now (its mutex went with the channel)
    lock.lock();
    const bool busy = active_.load(std::memory_order_relaxed) > 0 || !outgoing_.empty();
    wake_.wait_for(lock, busy ? std::chrono::milliseconds(1) : std::chrono::milliseconds(20),
                   [&] { return stopping_ || look_now_; });
    look_now_ = false;
  }
}

void MpiAbortChannel::poll_incoming() {
  if (incoming_ == MPI_REQUEST_NULL) return;
  int done = 0;
  MPI_Status status;
  if (MPI_Test(&incoming_, &done, &status) != MPI_SUCCESS) {
    incoming_ = MPI_REQUEST_NULL;
    return;
  }
  if (done == 0) return;
  const MpiAbortMessage message = inbox_;
  post_receive();  // another rank may abort too: its message is taken (and dropped) as well
  // A message for an earlier world of this process (its channel freed, the context id
  // reused) is not this world's.
  if (message.generation != generation_) return;
  const std::size_t length = strnlen(message.reason, sizeof message.reason);
  // The listeners may destroy the world's last communicator, and with it this channel (see
  // the destructor): the state stays while trigger runs, and nothing of `this` is touched after.
  const std::shared_ptr<AbortState> state = state_;
  state->trigger(status.MPI_SOURCE, std::string(message.reason, length), /*local=*/false);
}

void MpiAbortChannel::poll_outgoing() {
  std::erase_if(outgoing_, [](MPI_Request& request) {
    int done = 0;
    return MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done != 0;
  });
}

}  // namespace swp::detail
