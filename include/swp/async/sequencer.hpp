#pragma once
// SubmissionSequencer: globally ordered submission (seed _SubmissionSequencer).

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>

#include "swp/async/cancelled.hpp"
#include "swp/async/future.hpp"
#include "swp/async/resumer.hpp"
#include "swp/async/scheduler.hpp"

namespace swp {

/// Thrown to a sequencer waiter whose turn did not come within the timeout.
class SequencerTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Hands out submission turns 0, 1, 2, ... Every globally ordered task instance gets a
/// sequence number when it is enqueued; `co_await seq.turn(n, who)` resumes once all turns
/// before n have passed, so every rank issues its collectives in the same order however its
/// lanes interleave. The holder of turn n calls `advance()` when its submission is done. Each
/// turn is awaited by at most one waiter.
///
/// Completion: `turn(n)` resumes (through the waiter's Resumer) when `next() == n`.
/// Errors: `check_timeouts` fails waiters older than the timeout with SequencerTimeout naming
/// the waiter, its turn and the turn the sequencer is stuck at; `cancel(e)` fails every waiter
/// with `e`. Both rethrow from the `co_await`.
/// Cancellation: a waiter whose coroutine's StopSignal fires throws `Cancelled(reason)`. A
/// coroutine destroyed while it waits leaves the list (see Co): its turn's advance resumes
/// nothing.
/// Allocation: none per turn. A parked waiter is a node of an intrusive list sorted by turn
/// that lives in the awaiting coroutine's frame, and parking reads no clock (see
/// `check_timeouts`). Name waiters with `turn(n, name, iter)` to keep the name from being
/// formatted (and allocated) for every turn: it is formatted only for an error.
///
/// Example:
/// ```
/// co_await sequencer.turn(seq, "InputDistStart", 3);  // named "InputDistStart (iter 3)"
/// issue_all_to_all();
/// sequencer.advance();
/// ```
class SubmissionSequencer {
 public:
  class TurnAwaiter : public detail::FutureWaiter {
   public:
    TurnAwaiter(SubmissionSequencer& sequencer, std::uint64_t seq, std::string who)
        : sequencer_(sequencer), seq_(seq), who_(std::move(who)) {}
    TurnAwaiter(SubmissionSequencer& sequencer, std::uint64_t seq, std::string_view name,
                std::int64_t iter) noexcept
        : sequencer_(sequencer), seq_(seq), name_(name), iter_(iter), lazy_name_(true) {}
    TurnAwaiter(TurnAwaiter&& o) noexcept
        : sequencer_(o.sequencer_),
          seq_(o.seq_),
          who_(std::move(o.who_)),
          name_(o.name_),
          iter_(o.iter_),
          lazy_name_(o.lazy_name_) {}
    // Still suspended (phase 1: parked, never claimed) only when its coroutine is destroyed
    // while it waits: unparked then, or advance() would resume the freed frame. Otherwise one
    // load and a branch.
    ~TurnAwaiter() {
      if (phase.load(std::memory_order_relaxed) == 1) [[unlikely]]
        abandon();
    }

    bool await_ready() const { return sequencer_.next() == seq_; }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> h) {
      handle = h;
      resumer = detail::resumer_of(h);
      signal_ = detail::stop_signal_of(h);
      if (!sequencer_.park(*this)) return false;
      if (signal_ != nullptr) on_stop_.emplace(signal_->token(), OnStop{this});
      return finish_suspend();
    }
    void await_resume() {
      on_stop_.reset();
      if (cancelled) throw Cancelled(signal_->reason());
      if (error_) std::rethrow_exception(error_);
    }

    /// The waiter's name as errors give it.
    [[nodiscard]] std::string who() const;

   private:
    friend class SubmissionSequencer;
    struct OnStop {
      TurnAwaiter* self;
      void operator()() const noexcept {
        if (!self->sequencer_.unpark(*self)) return;
        self->cancelled = true;
        self->claim();
      }
    };
    // The stop callback goes first: one running on another thread finishes (and, if it
    // unparked the waiter, claimed it: phase 2) before the sequencer is looked at.
    void abandon() noexcept {
      on_stop_.reset();
      if (phase.load(std::memory_order_acquire) == 1) sequencer_.unpark(*this);
    }

    SubmissionSequencer& sequencer_;
    std::uint64_t seq_;
    std::string who_;        // the name, when given as a string
    std::string_view name_;  // or a name and an iteration, formatted only for an error
    std::int64_t iter_ = 0;
    bool lazy_name_ = false;
    // Parking state, guarded by the sequencer's mutex.
    TurnAwaiter* prev_ = nullptr;
    TurnAwaiter* next_ = nullptr;
    bool parked_ = false;
    bool seen_ = false;        // a check_timeouts saw it parked: since_ is set
    Clock::time_point since_;  // that check's time
    std::exception_ptr error_;
    const StopSignal* signal_ = nullptr;
    std::optional<std::stop_callback<OnStop>> on_stop_;
  };

  explicit SubmissionSequencer(Scheduler& scheduler) : scheduler_(scheduler) {}

  /// Awaitable that resumes when turn `seq` has come. `who` names the waiter in errors.
  TurnAwaiter turn(std::uint64_t seq, std::string who) {
    return TurnAwaiter(*this, seq, std::move(who));
  }

  /// The same, for the waiter named `name (iter N)`; nothing is formatted unless an error
  /// needs the name, so this form never allocates. `name` must outlive the wait.
  TurnAwaiter turn(std::uint64_t seq, std::string_view name, std::int64_t iter) noexcept {
    return TurnAwaiter(*this, seq, name, iter);
  }

  /// Passes the turn on and resumes the holder of the next turn, if it waits.
  void advance();

  /// The turn now allowed to submit.
  [[nodiscard]] std::uint64_t next() const;

  /// Back to turn 0. Precondition: nobody waits.
  void reset();

  /// Fails waiters that have waited longer than `timeout`; returns how many. A wait is timed
  /// from the first call that saw it parked (parking itself reads no clock), so a waiter fails
  /// no earlier than `timeout` after it parked and at most one check interval later: the
  /// engines call this every `check_interval` (50 ms by default) against a 30 s timeout.
  std::size_t check_timeouts(Clock::duration timeout);

  /// Fails every waiter with `error`.
  void cancel(const std::exception_ptr& error);

  /// Number of suspended waiters.
  [[nodiscard]] std::size_t waiting() const;

 private:
  bool park(TurnAwaiter& w);
  bool unpark(TurnAwaiter& w);
  void link(TurnAwaiter& w) noexcept;
  void unlink(TurnAwaiter& w) noexcept;

  Scheduler& scheduler_;
  mutable std::mutex mutex_;
  std::uint64_t next_ = 0;
  // Parked waiters sorted by turn (FIFO among equal turns, which the protocol rules out).
  TurnAwaiter* head_ = nullptr;
  TurnAwaiter* tail_ = nullptr;
  std::size_t parked_ = 0;
};

}  // namespace swp
