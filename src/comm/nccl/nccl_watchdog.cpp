// NcclCommunicator::Impl: its watchdog (completes what the GPU finished, times out what passed
// its deadline, aborts on NCCL's asynchronous errors and on Communicator::abort()), the pooled
// events and blocks it gives back, and the communicator's teardown.

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "nccl_impl.hpp"
#include "nccl_wait.hpp"

namespace swp {

using detail::check_cuda;
using detail::state_of;

NcclCommunicator::Impl::~Impl() {
  stop_issuer();
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (watchdog.joinable()) watchdog.join();
  (void)cudaSetDevice(device->ordinal());  // the pools and events are this GPU's
  settle_device_events();
  destroy_comm();
  for (cudaEvent_t e : spare_events) (void)cudaEventDestroy(e);
}

void NcclCommunicator::Impl::destroy_comm() {
  // Aborted before the watchdog got to it: ncclCommDestroy would wait for collectives the
  // peers gave up.
  if (comm == nullptr || aborted) return;
  if (abort_by) {
    ncclCommAbort(comm);
    return;
  }
  if (nonblocking) {
    // Finalizing flushes what was issued and waits for the peers: within the timeout, or
    // the communicator is aborted instead of holding this destructor.
    ncclCommFinalize(comm);
    if (detail::settle(state_of(comm), SteadyClock::now() + timeout_ms) != ncclSuccess) {
      ncclCommAbort(comm);
      return;
    }
  }
  ncclCommDestroy(comm);
}

void NcclCommunicator::Impl::settle_device_events() {
  const auto deadline = SteadyClock::now() + std::max(timeout_ms, std::chrono::milliseconds(1000));
  detail::Backoff backoff;
  for (const auto& e : device_events)
    while (!e->query() && SteadyClock::now() < deadline) backoff.pause();
}

cudaEvent_t NcclCommunicator::Impl::take_event(const std::string& op,
                                               const std::string& description) {
  {
    std::lock_guard lock(mutex);
    if (!spare_events.empty()) {
      cudaEvent_t e = spare_events.back();
      spare_events.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), rank, op,
             description + ": cudaEventCreate");
  return e;
}

Event& NcclCommunicator::Impl::take_device_event() {
  std::lock_guard lock(mutex);
  for (const auto& e : device_events)
    if (e->query()) return *e;
  device_events.push_back(device->make_event());
  return *device_events.back();
}

void NcclCommunicator::Impl::request_abort() {
  {
    std::lock_guard lock(mutex);
    abort_by = aborts;
  }
  wake.notify_all();
  turns.notify_all();
}

void NcclCommunicator::Impl::start_watchdog() {
  watchdog = std::thread([this] { watch(); });
}

void NcclCommunicator::Impl::watch() {
  cudaSetDevice(device->ordinal());
  auto pause = std::chrono::microseconds(1);
  int idle_polls = 0;
  std::unique_lock lock(mutex);
  while (true) {
    if (abort_by && !aborted)
      abort_all(lock, abort_by->info().value_or(detail::AbortState::Info{}).message(), true);
    if (pending.empty()) {  // parked until an operation or an abort comes (or the end)
      wake.wait(lock, [&] { return stopping || !pending.empty() || (abort_by && !aborted); });
      if (abort_by && !aborted) continue;
      if (pending.empty()) return;  // stopping, nothing left
      pause = std::chrono::microseconds(1);
      idle_polls = 0;
    }
    // One finished (or expired) operation at a time: finishing it releases the lock, and
    // an abort empties the list meanwhile.
    bool progressed = false;
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      const cudaError_t q = cudaEventQuery(it->event);
      if (q == cudaErrorNotReady && SteadyClock::now() < it->deadline) continue;
      Pending done = std::move(*it);
      pending.erase(it);
      const auto ending_at = ending.insert(done.seq);
      progressed = true;
      ++finishing;
      lock.unlock();
      finish(done, q);
      lock.lock();
      --finishing;
      ending.erase(ending_at);
      std::vector<std::shared_ptr<const void>> owners = owners_done();
      finished.notify_all();
      if (!owners.empty()) {
        lock.unlock();
        owners.clear();
        lock.lock();
      }
      break;
    }
    ncclResult_t async = ncclSuccess;
    if (!pending.empty() && !aborted && ncclCommGetAsyncError(comm, &async) == ncclSuccess &&
        async != ncclSuccess && async != ncclInProgress)
      abort_all(lock,
                std::string("NCCL reported an asynchronous error: ") + ncclGetErrorString(async));
    if (progressed) {
      pause = std::chrono::microseconds(1);
      idle_polls = 0;
    } else if (++idle_polls < 64) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    } else {
      wake.wait_for(lock, pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
}

bool NcclCommunicator::Impl::delivered() const {
  if (finishing > 0) return false;
  for (const Pending& p : pending)
    if (cudaEventQuery(p.event) == cudaSuccess) return false;
  return true;
}

void NcclCommunicator::Impl::finish(Pending& p, cudaError_t q) {
  if (q == cudaSuccess) {
    for (const Staged& s : p.staged)
      if (s.host_recv != nullptr) std::memcpy(s.host_recv, s.pinned.data, s.bytes);
    release(p);
    p.keep.reset();  // delivered: its buffers' owner may go (before its future completes)
    if (!p.completed && !p.retire_only) p.promise.set_value();
    return;
  }
  if (q == cudaErrorNotReady) {  // past its deadline
    std::unique_lock lock(mutex);
    const std::string reason = p.description + " did not complete in " +
                               std::to_string(timeout_ms.count()) +
                               " ms: a rank did not take part (it failed, or issued its "
                               "operations on this communicator in another order)";
    // Aborted first, so that a call made once this operation's error is seen fails at once.
    abort_all(lock, "the communicator was aborted after " + p.description + " timed out");
    lock.unlock();
    // The aborted kernels end: the event completes, its blocks can go.
    cudaEventSynchronize(p.event);
    release(p);
    p.keep.reset();
    if (!p.completed) p.promise.set_error(std::make_exception_ptr(CommTimeout(rank, p.op, reason)));
    return;
  }
  const std::string reason = p.description + " failed on the GPU: " + cudaGetErrorString(q);
  if (p.completed) {
    // Its future completed when it was enqueued: what comes after it learns of it.
    std::unique_lock lock(mutex);
    abort_all(lock, "the communicator was aborted: " + reason);
  }
  release(p);
  p.keep.reset();
  if (!p.completed && !p.retire_only)
    p.promise.set_error(std::make_exception_ptr(CommError(rank, p.op, reason)));
}

void NcclCommunicator::Impl::abort_all(std::unique_lock<std::mutex>& lock,
                                       const std::string& reason, bool by_abort) {
  if (failure.empty()) {
    failure = reason;  // no call starts from now on
    // A call between its check and its enqueue finishes first (a freed communicator must
    // not be used); one stuck inside NCCL is what ncclCommAbort, from this thread, ends.
    // An abort waits at most 1 s for it: a call blocked in NCCL behind collectives an
    // aborted peer never joins does not return by itself.
    const auto patience =
        by_abort ? std::min<std::chrono::milliseconds>(timeout_ms, std::chrono::seconds(1))
                 : timeout_ms;
    calls_done.wait_for(lock, patience, [&] { return in_call == 0; });
    ncclCommAbort(comm);
    aborted = true;
  }
  std::list<Pending> failed = std::move(pending);
  pending.clear();
  std::vector<std::uint64_t> failing;  // their numbers, `ending` until their blocks are back
  for (const Pending& p : failed) {
    failing.push_back(p.seq);
    ending.insert(p.seq);
  }
  // The queued operations never run: the deferred ones fail here, the callers waiting for
  // their turn wake and fail themselves.
  std::list<Queued> unissued;
  for (auto it = queue.begin(); it != queue.end();) {
    auto next = std::next(it);
    if (it->kind == Queued::Kind::deferred && !it->issuing)
      unissued.splice(unissued.end(), queue, it);
    it = next;
  }
  turns.notify_all();
  const std::shared_ptr<detail::AbortState> by = by_abort ? abort_by : nullptr;
  lock.unlock();
  const auto error = [&](const std::string& op, const std::string& description,
                         std::string_view verb) {
    return by ? by->error(rank, op, description, verb)
              : std::make_exception_ptr(
                    CommError(rank, op, description + " " + std::string(verb) + ": " + reason));
  };
  for (Pending& p : failed) {
    cudaEventSynchronize(p.event);
    release(p);
    p.keep.reset();
    if (!p.completed && !p.retire_only) p.promise.set_error(error(p.op, p.description, "failed"));
  }
  for (Queued& q : unissued) {
    (void)cudaEventDestroy(q.after);  // its stream's work may never end: not recorded again
    q.promise.set_error(error(q.op, q.description, "was not run"));
  }
  // Their callables (and what those captured) go here too, without the lock.
  failed.clear();
  unissued.clear();
  lock.lock();
  for (const std::uint64_t seq : failing) ending.erase(ending.find(seq));
  std::vector<std::shared_ptr<const void>> owners = owners_done();
  if (!owners.empty()) {
    lock.unlock();
    owners.clear();
    lock.lock();
  }
}

std::vector<std::shared_ptr<const void>> NcclCommunicator::Impl::owners_done() {
  std::vector<std::shared_ptr<const void>> done;
  if (kept.empty()) return done;
  std::uint64_t oldest = next_seq;  // the oldest operation not ended: none yet
  for (const Pending& p : pending) oldest = std::min(oldest, p.seq);
  for (const Queued& q : queue)
    if (q.kind == Queued::Kind::deferred) oldest = std::min(oldest, q.seq);
  if (!ending.empty()) oldest = std::min(oldest, *ending.begin());
  std::erase_if(kept, [&](Kept& k) {
    if (k.before > oldest) return false;
    done.push_back(std::move(k.owner));
    return true;
  });
  return done;
}

void NcclCommunicator::Impl::release(Pending& p) {
  for (Staged& s : p.staged) pinned.give(s.pinned);
  p.staged.clear();
  for (const auto& block : p.scratch) scratch.give(block);
  p.scratch.clear();
  if (p.event != nullptr) {
    std::lock_guard lock(mutex);
    spare_events.push_back(p.event);
  }
  p.event = nullptr;
}

void NcclCommunicator::Impl::stop_issuer() {
  {
    std::lock_guard lock(mutex);
    stop_issuing = true;
  }
  to_issue.notify_all();
  if (issuer.joinable()) issuer.join();
  std::list<Queued> left;
  std::vector<std::shared_ptr<const void>> owners;
  {
    std::lock_guard lock(mutex);
    left.swap(queue);        // deferred only: callers are gone before the communicator
    owners = owners_done();  // never issued: they touch nothing
  }
  owners.clear();
  for (Queued& q : left) {
    (void)cudaEventDestroy(q.after);
    q.promise.set_error(std::make_exception_ptr(CommError(
        rank, q.op, q.description + " was not run: the communicator was destroyed first")));
  }
}

void NcclCommunicator::Impl::advance() {
  if (queue.empty()) return;
  if (queue.front().kind == Queued::Kind::caller) {
    queue.front().turn = true;
    turns.notify_all();
  } else {
    to_issue.notify_all();
  }
}

}  // namespace swp
