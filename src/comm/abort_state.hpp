#pragma once
// AbortState: whether the communicators that abort together were aborted, by which rank and
// why — shared by an MPI world and every group split from it, and by an NCCL communicator
// bootstrapped over one of them (the comm layer's private header).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace swp::detail {

class AbortState {
 public:
  /// Who aborted (their rank in the numbering of the communicator the state started with:
  /// the world for MPI) and the reason they gave.
  struct Info {
    int rank = -1;
    std::string reason;
    /// "rank 1 aborted: task 'Forward' failed in iteration 7: ..."
    [[nodiscard]] std::string message() const;
  };
  /// Told once, when the state is aborted: `local` when this process called abort() (a
  /// backend then tells its peers), false when a peer's abort arrived.
  using Listener = std::function<void(const Info& info, bool local)>;

  /// `self_rank`: this process's rank in the state's numbering (-1: the caller's rank()).
  explicit AbortState(int self_rank = -1) : self_rank_(self_rank) {}

  [[nodiscard]] int self_rank() const noexcept { return self_rank_; }
  [[nodiscard]] bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }
  [[nodiscard]] std::optional<Info> info() const;

  /// Records the first abort (later ones change nothing and return false), then tells every
  /// listener, on this thread, one at a time and without the listeners' lock: a listener
  /// fails pending operations, which may resume their waiters right here, and a waiter may
  /// destroy a communicator of this state (unlisten()) or make one (listen()).
  bool trigger(int rank, std::string reason, bool local);

  /// This process aborts (Communicator::abort, or a backend whose operation failed in a way
  /// its peers cannot see): trigger() as self_rank(), or as `rank` where the state has none,
  /// local. Never throws (out of memory: the peers still have their timeouts).
  void abort_here(int rank, std::string reason) noexcept;

  /// Adds a listener; told at once (on this thread, without the lock) when the state is
  /// aborted already. Returns the id unlisten() takes.
  std::uint64_t listen(Listener listener);
  /// Removes a listener: it is not called from now on, and once this returns no call of it is
  /// in progress (its object may go) — except when called on the thread that is telling the
  /// listeners, from inside that very listener's call (a waiter it resumed destroys its
  /// communicator): then that call is still on the stack, and the listener is removed when it
  /// returns (the caller must not use the listener's object after returning either).
  void unlisten(std::uint64_t id) noexcept;

  /// CommAborted for this rank's operation `op` ("rank R: OP 'WHAT' (N T)" is `description`):
  /// "DESCRIPTION VERB: rank 1 aborted: REASON", VERB "failed" (it was under way) or "was not
  /// run". Precondition: aborted().
  [[nodiscard]] std::exception_ptr error(int rank, std::string op, const std::string& description,
                                         std::string_view verb) const;

 private:
  const int self_rank_;
  std::atomic<bool> aborted_{false};  // set (release) once info_ is written
  mutable std::mutex mutex_;          // info_
  std::optional<Info> info_;
  std::mutex listeners_mutex_;  // the fields below (not held while a listener runs)
  std::condition_variable call_ended_;
  std::map<std::uint64_t, Listener> listeners_;
  std::uint64_t next_id_ = 0;
  bool told_ = false;   // the listeners were told: one added later is told at once
  bool local_ = false;  // what they were told
  // The listener trigger() is calling (at most one call at a time: only the first abort
  // tells), the thread it runs on, and whether it unlistened itself meanwhile.
  std::optional<std::uint64_t> calling_;
  std::thread::id telling_thread_;
  bool erase_after_call_ = false;
};

/// what() of the exception in `error` (a fixed text for one not derived from std::exception):
/// the reason an operation's own failure gives when it aborts the communicator.
[[nodiscard]] std::string message_of(const std::exception_ptr& error);

}  // namespace swp::detail
