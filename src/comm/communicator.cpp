#include "swp/comm/communicator.hpp"

#include <utility>

#include "abort_state.hpp"

namespace swp {

namespace detail {

std::string AbortState::Info::message() const {
  return "rank " + std::to_string(rank) + " aborted: " + reason;
}

std::optional<AbortState::Info> AbortState::info() const {
  std::lock_guard lock(mutex_);
  return info_;
}

bool AbortState::trigger(int rank, std::string reason, bool local) {
  Info info;
  {
    std::lock_guard lock(mutex_);
    if (info_) return false;  // the first abort wins
    info_ = Info{rank, std::move(reason)};
    info = *info_;
    // Release: whoever sees aborted() sees info_ (error() reads it under the mutex anyway).
    aborted_.store(true, std::memory_order_release);
  }
  // A listener that aborts again (a failure its own abort caused) returns above. The
  // listeners are called without the lock (see trigger's comment); those added from now on
  // are told by listen(), those removed meanwhile are skipped.
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(listeners_mutex_);
    told_ = true;
    local_ = local;
    telling_thread_ = std::this_thread::get_id();
    for (const auto& [id, listener] : listeners_) ids.push_back(id);
  }
  for (const std::uint64_t id : ids) {
    Listener* listener = nullptr;
    {
      std::lock_guard lock(listeners_mutex_);
      const auto it = listeners_.find(id);
      if (it == listeners_.end()) continue;  // unlistened meanwhile
      listener = &it->second;  // stays: unlisten() waits for the call, or leaves it to us
      calling_ = id;
    }
    try {
      (*listener)(info, local);
    } catch (...) {
      // One backend failing (out of memory failing its operations) must not keep the
      // others from being told.
    }
    {
      std::lock_guard lock(listeners_mutex_);
      if (erase_after_call_) listeners_.erase(id);
      erase_after_call_ = false;
      calling_.reset();
    }
    call_ended_.notify_all();
  }
  std::lock_guard lock(listeners_mutex_);
  telling_thread_ = std::thread::id();
  return true;
}

std::uint64_t AbortState::listen(Listener listener) {
  std::unique_lock lock(listeners_mutex_);
  // Told already: told now, once, without the lock. Not yet told (even if trigger() recorded
  // the abort and is about to take this lock): trigger tells it.
  if (told_) {
    const bool local = local_;
    lock.unlock();
    try {
      listener(*info(), local);
    } catch (...) {
      // As in trigger(): the listener is still added (unlisten removes it).
    }
    lock.lock();
  }
  const std::uint64_t id = next_id_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void AbortState::unlisten(std::uint64_t id) noexcept {
  std::unique_lock lock(listeners_mutex_);
  if (calling_ == id && telling_thread_ == std::this_thread::get_id()) {
    erase_after_call_ = true;  // from inside its own call: trigger removes it once it returns
    return;
  }
  call_ended_.wait(lock, [&] { return calling_ != id; });
  listeners_.erase(id);
}

void AbortState::abort_here(int rank, std::string reason) noexcept {
  try {
    trigger(self_rank_ >= 0 ? self_rank_ : rank, std::move(reason), /*local=*/true);
  } catch (...) {
    // Out of memory recording the reason, or a backend failing to send: nothing better to
    // do here; the peers still have their timeouts.
  }
}

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

std::exception_ptr AbortState::error(int rank, std::string op, const std::string& description,
                                     std::string_view verb) const {
  const Info by = info().value_or(Info{});
  return std::make_exception_ptr(
      CommAborted(rank, std::move(op), description + " " + std::string(verb) + ": " + by.message(),
                  by.rank, by.reason));
}

}  // namespace detail

Communicator::Communicator() : abort_state_(std::make_shared<detail::AbortState>()) {}

Communicator::~Communicator() = default;

void Communicator::abort(std::string reason) noexcept {
  abort_state_->abort_here(rank(), std::move(reason));
}

void Communicator::keep_until_done(std::shared_ptr<const void> owner) {
  owner.reset();  // nothing under way outlives its future here
}

bool Communicator::aborted() const noexcept { return abort_state_->aborted(); }

std::string Communicator::abort_reason() const {
  const auto info = abort_state_->info();
  return info ? info->message() : std::string();
}

Future<void> Communicator::refused(std::string_view op, const std::string& description) const {
  Promise<void> promise;
  Future<void> future = promise.get_future();
  promise.set_error(abort_state_->error(rank(), std::string(op), description, "was not run"));
  return future;
}

std::size_t size_of(DataType type) noexcept {
  switch (type) {
    case DataType::u8:
      return 1;
    case DataType::i32:
    case DataType::f32:
      return 4;
    case DataType::i64:
    case DataType::f64:
      return 8;
  }
  return 1;
}

std::string_view name_of(DataType type) noexcept {
  switch (type) {
    case DataType::u8:
      return "u8";
    case DataType::i32:
      return "i32";
    case DataType::i64:
      return "i64";
    case DataType::f32:
      return "f32";
    case DataType::f64:
      return "f64";
  }
  return "?";
}

std::string Communicator::describe(std::string_view op, std::string_view what, std::size_t count,
                                   DataType type) const {
  std::string s = "rank " + std::to_string(rank()) + ": " + std::string(op);
  if (!what.empty()) s += " '" + std::string(what) + "'";
  s += " (" + std::to_string(count) + " " + std::string(name_of(type)) + ")";
  return s;
}

void Communicator::require(bool ok, std::string_view op, std::string_view what,
                           std::string_view message) const {
  if (ok) return;
  std::string s = "rank " + std::to_string(rank()) + ": " + std::string(op);
  if (!what.empty()) s += " '" + std::string(what) + "'";
  throw std::invalid_argument(s + ": " + std::string(message));
}

void Communicator::require_counts(const AllToAllVBuffers& buffers,
                                  const std::string& description) const {
  const auto n = static_cast<std::size_t>(size());
  if (buffers.send_counts.size() == n && buffers.recv_counts.size() == n) return;
  throw CommError(rank(), "all_to_all_v",
                  description + ": the counts when it started had " +
                      std::to_string(buffers.send_counts.size()) + " send and " +
                      std::to_string(buffers.recv_counts.size()) +
                      " receive entries; it needs one per rank (" + std::to_string(n) + ")");
}

}  // namespace swp
