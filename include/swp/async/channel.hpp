#pragma once
// Channel<T>: a bounded queue between coroutines (and threads), with back-pressure both ways.

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <utility>
#include <vector>

#include "swp/async/cancelled.hpp"
#include "swp/async/co.hpp"
#include "swp/async/future.hpp"
#include "swp/async/resumer.hpp"

namespace swp {

/// Thrown by a send on a closed channel: the value was not sent (see Channel::send for who
/// keeps it).
class ChannelClosed : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// A bounded multi-producer, multi-consumer queue of `T` whose full and empty states suspend
/// coroutines instead of blocking threads: the push side of a pipeline (`pipe.fill_pipeline(
/// channel)`, `Pipeline::submit`), or any producer/consumer pair of tasks.
///
/// Completion: `co_await ch.send(v)` completes once `v` is in the queue (or handed straight
/// to a waiting receiver); it suspends while `capacity()` values wait. `co_await ch.receive()`
/// completes with the oldest value, or with an empty optional once the channel is closed and
/// empty; it suspends while the channel is empty and open. Values leave in the order their
/// sends completed; waiting senders are admitted, and waiting receivers served, first come
/// first served. A suspended side resumes through its coroutine's Resumer (its lane), or inline
/// on the thread that made room or sent the value when it has none. `try_send`/`try_receive`
/// never suspend. Nothing allocates per value (a ring of `capacity` slots).
/// Errors: a send on a closed channel throws ChannelClosed (`try_send` returns false).
/// Cancellation: a waiting send or receive of a coroutine running under a StopSignal throws
/// swp::Cancelled when it fires — the value is then neither sent nor taken. Who keeps a value
/// that was not sent: `send(value)` with a (non-const) lvalue moves from it only once it is
/// accepted, so on ChannelClosed or Cancelled the caller still has it, untouched (as with
/// `try_send`); `send(std::move(value))` and `send(temporary)` hand it to the awaiter, which
/// destroys a refused value with itself. Send an lvalue where a refused value must survive.
/// `close()` is for the producers: values already queued are still received; waiting senders
/// get ChannelClosed. A coroutine destroyed while its send or receive waits leaves the queue
/// of waiters (its value unsent; see Co): the channel serves the next one.
///
/// Example:
/// ```
/// swp::Channel<Request> requests(64);
/// // producer: co_await requests.send(req);  ...  requests.close();  (req: moved from once sent)
/// // consumer: while (auto req = co_await requests.receive()) handle(*req);
/// ```
template <class T>
class Channel {
 public:
  /// A channel holding up to `capacity` values (at least 1: std::invalid_argument otherwise).
  explicit Channel(std::size_t capacity) : ring_(capacity) {
    if (capacity == 0) throw std::invalid_argument("swp::Channel: capacity must be at least 1");
  }
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel() = default;

  class SendAwaiter;
  class ReceiveAwaiter;

  /// Awaitable send of the caller's `value`, moved from only once accepted: on ChannelClosed
  /// or Cancelled it is left untouched (see the class comment). The awaiter refers to
  /// `value`: keep it alive until the co_await completes.
  [[nodiscard]] SendAwaiter send(T& value) { return SendAwaiter(*this, value); }
  /// Awaitable send of a value the awaiter takes over (an rvalue): a refused or cancelled
  /// send destroys it with the awaiter.
  [[nodiscard]] SendAwaiter send(T&& value) { return SendAwaiter(*this, std::move(value)); }
  /// Awaitable send of a copy of `value` (a refused copy is destroyed; `value` is untouched).
  [[nodiscard]] SendAwaiter send(const T& value) { return SendAwaiter(*this, T(value)); }

  /// Sends `value` if that needs no wait: true when it was taken (moved from), false when the
  /// channel is full or closed (then `value` is untouched).
  bool try_send(T& value) {
    Waiter* receiver = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (closed_ || (count_ == ring_.size() && receivers_.empty())) return false;
      receiver = deliver(value);
    }
    if (receiver != nullptr) receiver->claim();
    return true;
  }
  bool try_send(T&& value) { return try_send(value); }

  /// Awaitable receive (see the class comment).
  [[nodiscard]] ReceiveAwaiter receive() { return ReceiveAwaiter(*this); }

  /// The oldest value if one is queued (or a waiting sender has one); empty otherwise. Empty
  /// does not say whether more will come: see done().
  std::optional<T> try_receive() {
    std::optional<T> out;
    Waiter* sender = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (count_ == 0) return out;
      sender = take(out);
    }
    if (sender != nullptr) sender->claim();
    return out;
  }

  /// Ends the stream: no more sends; receivers drain what is queued, then get an empty
  /// optional. Waiting senders throw ChannelClosed. Idempotent; any thread.
  void close() {
    std::vector<Waiter*> wake;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = true;
      // Receivers wait only on an empty channel: they all get the end. Senders wait only on
      // a full one: their values are refused.
      for (Waiter* w = receivers_.pop(); w != nullptr; w = receivers_.pop()) wake.push_back(w);
      for (Waiter* w = senders_.pop(); w != nullptr; w = senders_.pop()) {
        w->refused = true;
        wake.push_back(w);
      }
    }
    for (Waiter* w : wake) w->claim();
  }

  /// Opens a closed channel again, holding up to `capacity` values from now on (at least
  /// those still queued, which stay first): what a pipeline's next push run does with its
  /// inbox (Pipeline::fill_submissions). Nobody waits on a closed channel's send side, so
  /// only later sends see it open. Errors: std::logic_error when the channel is open;
  /// std::invalid_argument for capacity 0. Any thread.
  void reopen(std::size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("swp::Channel: capacity must be at least 1");
    std::lock_guard lock(mutex_);
    if (!closed_) throw std::logic_error("swp::Channel::reopen: the channel is open");
    std::vector<std::optional<T>> ring(std::max(capacity, count_));
    for (std::size_t i = 0; i < count_; ++i)
      ring[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_ = std::move(ring);
    head_ = 0;
    closed_ = false;
  }

  /// Closed and nothing left to receive.
  [[nodiscard]] bool done() const {
    std::lock_guard lock(mutex_);
    return closed_ && count_ == 0;
  }
  [[nodiscard]] bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  /// Values queued now.
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return count_;
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return ring_.size(); }

 private:
  // A suspended sender (with its value) or receiver (with the place for one), linked in its
  // side's FIFO while it waits.
  struct Waiter : detail::FutureWaiter {
    std::optional<T>* value = nullptr;  // a receiver's result
    T* offered = nullptr;               // a sender's value
    bool refused = false;               // a sender refused by close()
    bool linked = false;
  };
  struct WaitList {
    detail::FutureWaiter* head = nullptr;
    detail::FutureWaiter* tail = nullptr;
    [[nodiscard]] bool empty() const noexcept { return head == nullptr; }
    void push(Waiter& w) noexcept {
      w.prev = tail;
      w.next = nullptr;
      (tail != nullptr ? tail->next : head) = &w;
      tail = &w;
      w.linked = true;
    }
    void unlink(Waiter& w) noexcept {
      (w.prev != nullptr ? w.prev->next : head) = w.next;
      (w.next != nullptr ? w.next->prev : tail) = w.prev;
      w.linked = false;
    }
    Waiter* pop() noexcept {
      auto* w = static_cast<Waiter*>(head);
      if (w != nullptr) unlink(*w);
      return w;
    }
  };

  // Under the lock, with the channel open and room or a waiting receiver: hands `value` to
  // the first waiting receiver (returned, to be claimed after unlocking) or queues it.
  Waiter* deliver(T& value) {
    if (Waiter* receiver = receivers_.pop()) {
      receiver->value->emplace(std::move(value));
      return receiver;
    }
    ring_[(head_ + count_) % ring_.size()].emplace(std::move(value));
    ++count_;
    return nullptr;
  }

  // Under the lock, with a value queued: moves the oldest into `out` and lets the first
  // waiting sender's value into the freed place (that sender is returned, to be claimed).
  Waiter* take(std::optional<T>& out) {
    auto& oldest = ring_[head_];
    out.emplace(std::move(*oldest));
    oldest.reset();
    head_ = (head_ + 1) % ring_.size();
    --count_;
    Waiter* sender = senders_.pop();
    if (sender != nullptr) {
      ring_[(head_ + count_) % ring_.size()].emplace(std::move(*sender->offered));
      ++count_;
    }
    return sender;
  }

 private:
  // What both awaiters share: the coroutine to resume, its stop signal and the callback that
  // unlinks it from `list` when the signal fires.
  class Awaiting : protected Waiter {
   protected:
    explicit Awaiting(Channel& ch) : ch_(ch) {}

    template <class Promise>
    void bind(std::coroutine_handle<Promise> h) noexcept {
      this->handle = h;
      this->resumer = detail::resumer_of(h);
      signal_ = detail::stop_signal_of(h);
    }
    // Linked into `list` (after unlocking): listens for the stop signal and suspends, unless
    // served or cancelled meanwhile.
    bool suspend_in(WaitList& list) {
      if (signal_ != nullptr) on_stop_.emplace(signal_->token(), OnStop{this, &list});
      return this->finish_suspend();
    }
    void end_wait() {
      on_stop_.reset();
      if (this->cancelled) throw Cancelled(signal_->reason());
    }
    // Still suspended (phase 1: linked, never claimed) only when its coroutine is destroyed
    // while it waits: unlinked then, or the channel would serve and resume the freed frame.
    // Otherwise one load and a branch.
    void leave(WaitList& list) noexcept {
      if (this->phase.load(std::memory_order_relaxed) == 1) [[unlikely]]
        abandon(list);
    }

    Channel& ch_;

   private:
    struct OnStop {
      Awaiting* self;
      WaitList* list;
      void operator()() const { self->ch_.cancel_in(*list, *self); }
    };
    // The stop callback goes first: one running on another thread finishes (and, if it
    // unlinked the waiter, claimed it: phase 2) before the channel is looked at.
    void abandon(WaitList& list) noexcept {
      on_stop_.reset();
      if (this->phase.load(std::memory_order_acquire) == 1) ch_.drop_waiter(list, *this);
    }
    const StopSignal* signal_ = nullptr;
    std::optional<std::stop_callback<OnStop>> on_stop_;
  };

 public:
  // Sends *source_: the caller's lvalue (moved from only once accepted), or owned_ for an
  // rvalue the awaiter took over.
  class SendAwaiter : Awaiting {
   public:
    SendAwaiter(Channel& ch, T& value) : Awaiting(ch), source_(&value) {}
    SendAwaiter(Channel& ch, T&& value)
        : Awaiting(ch), owned_(std::move(value)), source_(&*owned_) {}
    SendAwaiter(const SendAwaiter&) = delete;
    SendAwaiter& operator=(const SendAwaiter&) = delete;
    ~SendAwaiter() { this->leave(this->ch_.senders_); }

    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> h) {
      this->bind(h);
      Channel& ch = this->ch_;
      Waiter* receiver = nullptr;
      {
        std::lock_guard lock(ch.mutex_);
        if (ch.closed_) {
          this->refused = true;
          return false;
        }
        if (ch.count_ < ch.ring_.size() || !ch.receivers_.empty()) {
          receiver = ch.deliver(*source_);
        } else {
          this->offered = source_;
          ch.senders_.push(*this);
          receiver = this;  // marks "waiting" below
        }
      }
      if (receiver == this) return this->suspend_in(ch.senders_);
      if (receiver != nullptr) receiver->claim();
      return false;
    }
    void await_resume() {
      this->end_wait();
      if (this->refused) throw ChannelClosed("swp::Channel: send on a closed channel");
    }

   private:
    std::optional<T> owned_;
    T* source_;
  };

  class ReceiveAwaiter : Awaiting {
   public:
    explicit ReceiveAwaiter(Channel& ch) : Awaiting(ch) {}
    ReceiveAwaiter(const ReceiveAwaiter&) = delete;
    ReceiveAwaiter& operator=(const ReceiveAwaiter&) = delete;
    ~ReceiveAwaiter() { this->leave(this->ch_.receivers_); }

    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> h) {
      this->bind(h);
      Channel& ch = this->ch_;
      Waiter* sender = nullptr;
      {
        std::lock_guard lock(ch.mutex_);
        if (ch.count_ == 0 && !ch.closed_) {
          this->value = &result_;
          ch.receivers_.push(*this);
          sender = this;  // marks "waiting" below
        } else if (ch.count_ > 0) {
          sender = ch.take(result_);
        }
      }
      if (sender == this) return this->suspend_in(ch.receivers_);
      if (sender != nullptr) sender->claim();
      return false;
    }
    std::optional<T> await_resume() {
      this->end_wait();
      return std::move(result_);
    }

   private:
    std::optional<T> result_;
  };

 private:
  void cancel_in(WaitList& list, Waiter& w) {
    {
      std::lock_guard lock(mutex_);
      if (!w.linked) return;  // served or refused already: that claim resumes it
      list.unlink(w);
    }
    w.cancelled = true;
    w.claim();
  }

  // A waiter whose coroutine is destroyed mid-wait: unlinked unless served or refused already.
  void drop_waiter(WaitList& list, Waiter& w) noexcept {
    std::lock_guard lock(mutex_);
    if (w.linked) list.unlink(w);
  }

  mutable std::mutex mutex_;
  std::vector<std::optional<T>> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  bool closed_ = false;
  WaitList senders_, receivers_;
};

}  // namespace swp
