#pragma once
// SplitAgreement: before MpiCommunicator::split's blocking MPI_Comm_create_group, the listed
// ranks agree, by a deadline, that every one of them called split.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "../abort_state.hpp"
#include "mpi_error.hpp"

namespace swp::detail {

// The tag of split's agreement messages on the communicator split (its send and recv use 0).
constexpr int split_tag = 0x5350;

// What a listed rank tells the others of a split, in two rounds: `arrived` (it called split),
// then `ready` (every listed rank had arrived) or `gave_up` (it stopped waiting: its deadline,
// an abort, another's gave_up). `list` (a hash of the listed ranks) and `attempt` (how many
// splits of that list this rank called on the communicator before) name the split: a message
// naming another is left over from an earlier attempt (a rank that called late), and dropped.
struct SplitMessage {
  std::uint64_t list = 0;
  std::uint64_t attempt = 0;
  std::int32_t kind = 0;
  std::int32_t unused = 0;
};
constexpr std::int32_t split_arrived = 0;
constexpr std::int32_t split_ready = 1;
constexpr std::int32_t split_gave_up = 2;

// Before split's blocking MPI_Comm_create_group (which MPI cannot give up on), the listed
// ranks agree that every one of them called split, by nonblocking point-to-point messages on
// the calling thread, tested until the deadline: each sends `arrived` to the others; once all
// arrived, `ready`; the creation runs once every other rank is ready. A rank missing at the
// deadline, an abort, or another's `gave_up` fails the split on this rank (and sends
// `gave_up`, so that a rank calling late fails too instead of creating alone). Each rank
// decides by its own deadline, so a rank arriving just as another's deadline passes can still
// leave a creation waiting: the agreement narrows that to the moment of the deadline.
class SplitAgreement {
 public:
  SplitAgreement(MPI_Comm comm, int me, const std::vector<int>& members, std::uint64_t list,
                 std::uint64_t attempt)
      : comm_(comm), io_(new Io) {
    for (int r : members)
      if (r != me) peers_.push_back(r);
    mine_.list = list;
    mine_.attempt = attempt;
    io_->out.resize(3 * peers_.size());  // never reallocated while sends are under way
    io_->in.resize(peers_.size());
    io_->recvs.assign(peers_.size(), MPI_REQUEST_NULL);
    stage_.assign(peers_.size(), Stage::waiting);
  }
  SplitAgreement(const SplitAgreement&) = delete;
  SplitAgreement& operator=(const SplitAgreement&) = delete;
  // Withdraws what is still posted; the buffers of sends that do not complete within a second
  // (none should: 24 bytes go eagerly) are left to MPI for the process's life.
  ~SplitAgreement() {
    for (MPI_Request& r : io_->recvs)
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    bool settled = true;
    for (auto* list : {&io_->recvs, &io_->sends})
      for (MPI_Request& r : *list) {
        int done = 0;
        while (MPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0 &&
               std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        settled = settled && done != 0;
      }
    if (!settled) static_cast<void>(io_.release());
  }

  enum class Outcome { ready, timed_out, gave_up, aborted, failed };

  // The two rounds, until every other rank is ready or the split fails. `missing()` and
  // `gave_up_by()` name the ranks after a failure.
  Outcome run(std::chrono::milliseconds timeout, const detail::AbortState& aborts) {
    if (!send_all(split_arrived)) return give_up(Outcome::failed);
    for (std::size_t i = 0; i < peers_.size(); ++i)
      if (!post(i)) return give_up(Outcome::failed);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    bool ready_sent = false;
    auto pause = std::chrono::microseconds(1);
    for (int polls = 0;; ++polls) {
      bool progressed = false;
      for (std::size_t i = 0; i < peers_.size(); ++i) {
        MPI_Request& r = io_->recvs[i];
        if (r == MPI_REQUEST_NULL) continue;
        int done = 0;
        if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return give_up(Outcome::failed);
        if (done == 0) continue;
        progressed = true;
        const SplitMessage m = io_->in[i];
        if (m.list != mine_.list || m.attempt != mine_.attempt) {  // an earlier attempt's
          if (!post(i)) return give_up(Outcome::failed);
          continue;
        }
        if (m.kind == split_gave_up) {
          gave_up_by_.push_back(peers_[i]);
          return give_up(Outcome::gave_up);
        }
        if (m.kind == split_arrived && stage_[i] == Stage::waiting) {
          stage_[i] = Stage::arrived;
          if (!post(i)) return give_up(Outcome::failed);  // for its ready (or gave_up)
        } else if (m.kind == split_ready && stage_[i] == Stage::arrived) {
          stage_[i] = Stage::ready;  // nothing more of this split comes from it
        } else if (!post(i)) {
          return give_up(Outcome::failed);
        }
      }
      if (!ready_sent && all_at_least(Stage::arrived)) {
        // Every listed rank called split: each sends ready or gave_up within its own deadline,
        // which the next one outlasts.
        if (!send_all(split_ready)) return give_up(Outcome::failed);
        ready_sent = true;
        deadline = std::chrono::steady_clock::now() + timeout;
      }
      if (ready_sent && all_at_least(Stage::ready)) return Outcome::ready;
      if (aborts.aborted()) return give_up(Outcome::aborted);
      if (std::chrono::steady_clock::now() >= deadline) {
        confirming_ = ready_sent;
        const Stage wanted = ready_sent ? Stage::ready : Stage::arrived;
        for (std::size_t i = 0; i < peers_.size(); ++i)
          if (stage_[i] < wanted) missing_.push_back(peers_[i]);
        return give_up(Outcome::timed_out);
      }
      if (progressed || polls < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
      }
    }
  }

  // The ranks that did not call split in time, or — confirming() — that all called it but
  // did not confirm in time.
  [[nodiscard]] const std::vector<int>& missing() const noexcept { return missing_; }
  [[nodiscard]] bool confirming() const noexcept { return confirming_; }
  [[nodiscard]] const std::vector<int>& gave_up_by() const noexcept { return gave_up_by_; }

 private:
  enum class Stage { waiting, arrived, ready };
  struct Io {
    std::vector<SplitMessage> out, in;
    std::vector<MPI_Request> sends, recvs;
  };

  bool all_at_least(Stage stage) const {
    return std::all_of(stage_.begin(), stage_.end(), [&](Stage s) { return s >= stage; });
  }
  bool post(std::size_t i) {
    return MPI_Irecv(&io_->in[i], sizeof(SplitMessage), MPI_BYTE, peers_[i], split_tag, comm_,
                     &io_->recvs[i]) == MPI_SUCCESS;
  }
  bool send_all(std::int32_t kind) {
    for (int peer : peers_) {
      SplitMessage& m = io_->out[io_->sends.size()];
      m = mine_;
      m.kind = kind;
      MPI_Request r = MPI_REQUEST_NULL;
      if (MPI_Isend(&m, sizeof m, MPI_BYTE, peer, split_tag, comm_, &r) != MPI_SUCCESS)
        return false;
      io_->sends.push_back(r);
    }
    return true;
  }
  Outcome give_up(Outcome outcome) {
    if (io_->sends.size() + peers_.size() <= io_->out.size()) send_all(split_gave_up);
    return outcome;
  }

  MPI_Comm comm_;
  std::unique_ptr<Io> io_;
  std::vector<int> peers_;
  SplitMessage mine_;
  std::vector<Stage> stage_;
  std::vector<int> missing_, gave_up_by_;
  bool confirming_ = false;
};

}  // namespace swp::detail
