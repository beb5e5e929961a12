// NcclCommunicator's issuing: a Call's staging and its hand-over to the watchdog, the order
// check, the call order (Turn), the deferred operations (run_later) and the issuer thread that
// issues them (NcclCommunicator::Impl::issue_deferred).

#include "nccl_issue.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "../order_check.hpp"
#include "nccl_wait.hpp"
#include "swp/device/cuda/cuda_stream.hpp"

namespace swp {
namespace detail {

void* Call::scratch_block(std::size_t bytes) {
  try {
    scratch.push_back(impl.scratch.take(bytes));
  } catch (const std::exception& e) {
    throw CommError(impl.rank, op, description + ": staging it: " + e.what());
  }
  return scratch.back().data;
}

void* Call::device_in(const void* p, std::size_t bytes) {
  if (bytes == 0 || on_device(p)) return const_cast<void*>(p);
  void* d = scratch_block(bytes);
  check_cuda(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, stream), impl.rank, op,
             description + ": staging its input");
  return d;
}

void* Call::device_out(void* p, std::size_t bytes) {
  if (bytes == 0 || on_device(p)) return p;
  void* d = scratch_block(bytes);
  NcclCommunicator::Impl::Staged s;
  s.host_recv = p;
  s.device = d;
  s.bytes = bytes;
  staged.push_back(s);
  return d;
}

void Call::settle_enqueue() const {
  if (!impl.nonblocking) return;
  detail::settle_enqueued(state_of(impl.comm), impl.rank, op, description, impl.timeout_ms);
}

bool Call::finish_call(Promise<void>& promise) {
  settle_enqueue();
  for (auto& s : staged) {
    try {
      s.pinned = impl.pinned.take(s.bytes);
    } catch (const std::exception& e) {
      throw CommError(impl.rank, op, description + ": staging its result: " + e.what());
    }
    check_cuda(cudaMemcpyAsync(s.pinned.data, s.device, s.bytes, cudaMemcpyDeviceToHost, stream),
               impl.rank, op, description + ": copying its result out");
  }
  const bool early = staged.empty() &&
                     impl.completion.load(std::memory_order_relaxed) == NcclCompletion::submitted;
  if (early) {
    try {
      Event& event = impl.take_device_event();
      promise.set_event(&event, swp_stream.record(event));
    } catch (const std::exception& e) {
      throw CommError(impl.rank, op, description + ": recording its device event: " + e.what());
    }
  }
  NcclCommunicator::Impl::Pending p;
  p.event = impl.take_event(op, description);
  if (const cudaError_t rc = cudaEventRecord(p.event, stream); rc != cudaSuccess) {
    (void)cudaEventDestroy(p.event);
    check_cuda(rc, impl.rank, op, description + ": cudaEventRecord");
  }
  p.promise = promise;
  p.completed = early;
  p.deadline = SteadyClock::now() + impl.timeout_ms;
  p.op = op;
  p.description = description;
  p.staged = std::move(staged);
  p.scratch = std::move(scratch);
  p.keep = std::move(keep);
  staged.clear();
  scratch.clear();
  handed_over = true;
  p.seq = seq;
  {
    std::lock_guard lock(impl.mutex);
    if (p.seq == 0) p.seq = impl.next_seq++;
    impl.pending.push_back(std::move(p));
  }
  impl.wake.notify_all();
  return early;
}

void Call::retire() noexcept {
  if (handed_over || (staged.empty() && scratch.empty())) return;
  cudaEvent_t event = nullptr;
  if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) return;
  if (cudaEventRecord(event, stream) != cudaSuccess) {
    (void)cudaEventDestroy(event);
    return;
  }
  try {
    NcclCommunicator::Impl::Pending p;
    p.event = event;
    p.retire_only = true;
    p.deadline = SteadyClock::time_point::max();
    p.op = op;
    p.description = description;
    for (auto& s : staged) s.host_recv = nullptr;  // nothing is delivered
    p.staged = std::move(staged);
    p.scratch = std::move(scratch);
    p.keep = std::move(keep);  // a staged input may still be read (pinned host memory)
    p.seq = seq;
    std::lock_guard lock(impl.mutex);
    if (p.seq == 0) p.seq = impl.next_seq++;
    impl.pending.push_back(std::move(p));
  } catch (...) {
    // Out of memory for the entry: the blocks stay out of the pools.
  }
  impl.wake.notify_all();
}

cudaStream_t cuda_stream_of(Stream& stream, const NcclCommunicator::Impl& impl,
                            const std::string& description) {
  CudaStream* cuda = as_cuda(stream);
  if (cuda == nullptr)
    throw std::invalid_argument(description + ": stream '" + stream.name() +
                                "' is no CUDA stream (NCCL runs on the GPU)");
  if (cuda->device().ordinal() != impl.device->ordinal())
    throw std::invalid_argument(description + ": stream '" + stream.name() + "' is on GPU " +
                                std::to_string(cuda->device().ordinal()) + ", this rank's is GPU " +
                                std::to_string(impl.device->ordinal()));
  return cuda->native_handle();
}

void complete(NcclCommunicator::Impl& impl, Promise<void>& promise, const Outcome& outcome) {
  if (outcome.unissued) impl.aborts->abort_here(impl.rank, message_of(outcome.error));
  if (outcome.error) {
    promise.set_error(outcome.error);
  } else if (outcome.submitted) {
    promise.set_value();
  }
}

// The order check on NCCL (Communicator::set_order_check): an ncclAllGather of what each rank
// is about to run, on the operation's stream, read on the host before the operation itself is
// enqueued — a CPU round trip per collective (a debugging aid, as on MPI). nullptr when every
// rank runs the same; otherwise the error that fails the operation on every rank: the
// mismatch, naming each rank's call, or the check's own failure (its timeout aborts the
// communicator, as any collective's does).
Outcome check_order(NcclCommunicator::Impl& impl, Stream& stream, cudaStream_t s,
                    std::chrono::milliseconds timeout, const std::string& op,
                    const std::string& description, const std::string& check) {
  const detail::OpDescriptor mine = detail::descriptor_of(check);
  std::vector<detail::OpDescriptor> all(static_cast<std::size_t>(impl.size));
  Promise<void> promise;  // nobody else waits for it
  const Future<void> gathered = promise.get_future();
  const Outcome outcome = enqueue_call(
      impl, stream, s, timeout, op, description + " (its order check)",
      [&](Call& c) {
        const void* in = c.device_in(&mine, sizeof mine);
        void* out = c.device_out(all.data(), sizeof mine * all.size());
        check_nccl(ncclAllGather(in, out, sizeof mine, ncclUint8, c.impl.comm, c.stream),
                   c.impl.rank, c.op, c.description + ": ncclAllGather");
      },
      promise);
  if (outcome.error) return outcome;
  // The watchdog completes it (its result is for the host: the descriptors copied into `all`
  // first) or fails it by its deadline; outside the call, so that a timeout's abort does not
  // wait for this thread.
  detail::Backoff backoff;
  while (!gathered.ready()) backoff.pause();
  if (gathered.error_ptr()) return {gathered.error_ptr()};
  if (detail::same_everywhere(all, mine)) return {};
  return {
      std::make_exception_ptr(CommError(impl.rank, op, description + detail::order_mismatch(all)))};
}

Turn::Turn(NcclCommunicator::Impl& impl, std::chrono::milliseconds timeout, const std::string& what)
    : impl_(impl), call_(impl.call_mutex) {
  std::unique_lock lock(impl.mutex);
  if (impl.queue.empty()) return;
  entry_ = impl.queue.insert(impl.queue.end(), Queued{});
  queued_ = true;
  call_.unlock();
  const auto deadline = SteadyClock::now() + 2 * timeout;
  const auto ended = [&] {
    return entry_->turn || !impl.failure.empty() || impl.aborts->aborted() ||
           impl.abort_by != nullptr;
  };
  if (!impl.turns.wait_until(lock, deadline, ended))
    impl.abort_all(lock, "the communicator was aborted: rank " + std::to_string(impl.rank) + ": " +
                             what + " waited " + std::to_string(2 * timeout.count()) +
                             " ms for the operations called before it to be issued");
  lock.unlock();
  call_.lock();
}

Turn::~Turn() {
  if (!queued_) return;
  std::lock_guard lock(impl_.mutex);
  impl_.queue.erase(entry_);
  impl_.advance();
}

// An operation that needs what the stream's earlier work gives the host (all_to_all_v with
// counts known when it starts): takes its place in the call order now and returns at once;
// the issuer thread issues it once that work completed and its results reached the host,
// without the call mutex meanwhile (no host wait under the communicator's lock). Operations
// called after it wait for it to be issued (Turn).
Future<void> run_later(NcclCommunicator::Impl& impl, Stream& stream,
                       std::chrono::milliseconds timeout, std::string op, std::string description,
                       std::string check, std::function<void(Call&)> enqueue) {
  const cudaStream_t s = cuda_stream_of(stream, impl, description);
  Promise<void> promise;
  Future<void> future = promise.get_future();
  std::lock_guard call(impl.call_mutex);
  {
    std::lock_guard lock(impl.mutex);
    if (impl.aborts->aborted()) {
      promise.set_error(impl.aborts->error(impl.rank, op, description, "was not run"));
      return future;
    }
    if (!impl.failure.empty()) {
      promise.set_error(std::make_exception_ptr(
          CommError(impl.rank, op, description + " was not run: " + impl.failure)));
      return future;
    }
  }
  NcclCommunicator::Impl::Queued q;
  q.kind = NcclCommunicator::Impl::Queued::Kind::deferred;
  try {
    check_cuda(cudaSetDevice(impl.device->ordinal()), impl.rank, op,
               description + ": cudaSetDevice");
    q.after = impl.take_event(op, description);
    if (const cudaError_t rc = cudaEventRecord(q.after, s); rc != cudaSuccess) {
      (void)cudaEventDestroy(q.after);
      check_cuda(rc, impl.rank, op, description + ": cudaEventRecord");
    }
  } catch (const CommError&) {
    promise.set_error(std::current_exception());
    return future;
  }
  q.stream = &stream;
  q.cuda = s;
  q.timeout = timeout;
  q.deadline = SteadyClock::now() + timeout;
  q.op = std::move(op);
  q.description = std::move(description);
  q.check = std::move(check);
  q.enqueue = std::move(enqueue);
  q.promise = promise;
  {
    std::lock_guard lock(impl.mutex);
    q.id = ++impl.deferred_ids;
    q.seq = impl.next_seq++;
    impl.queue.push_back(std::move(q));
    if (!impl.issuer.joinable()) impl.issuer = std::thread([&impl] { impl.issue_deferred(); });
    if (impl.queue.size() == 1) impl.advance();
  }
  return future;
}

}  // namespace detail

void NcclCommunicator::Impl::issue_deferred() {
  // The issuer's CUDA calls (its queries, the operations it issues) are this rank's GPU's.
  (void)cudaSetDevice(device->ordinal());
  detail::Backoff backoff(std::chrono::microseconds(64));
  std::unique_lock lock(mutex);
  for (;;) {
    to_issue.wait(lock, [&] {
      return stop_issuing || (!queue.empty() && queue.front().kind == Queued::Kind::deferred);
    });
    if (stop_issuing) return;
    Queued* head = &queue.front();
    const cudaError_t q = cudaEventQuery(head->after);
    const bool late = SteadyClock::now() >= head->deadline;
    if ((q == cudaErrorNotReady && !late) || (q == cudaSuccess && !delivered() && !late)) {
      wake.notify_all();  // the watchdog may be sleeping between polls: it delivers sooner
      lock.unlock();
      backoff.pause();
      lock.lock();
      continue;
    }
    backoff.reset();
    if (q != cudaSuccess || !delivered()) {
      // Past its deadline, or the work before it failed: it cannot be issued, and nothing
      // after it may be (the ranks' order): the communicator is aborted.
      Queued dead = std::move(queue.front());
      queue.pop_front();
      const std::string reason =
          q == cudaSuccess || q == cudaErrorNotReady
              ? dead.description + " did not start in " + std::to_string(dead.timeout.count()) +
                    " ms: the work before it on stream '" + dead.stream->name() +
                    "' did not complete, or its results did not reach the host"
              : dead.description + ": the work before it on stream '" + dead.stream->name() +
                    "' failed: " + cudaGetErrorString(q);
      abort_all(lock, "the communicator was aborted: " + reason);
      lock.unlock();
      (void)cudaEventDestroy(dead.after);
      dead.promise.set_error(q == cudaSuccess || q == cudaErrorNotReady
                                 ? std::make_exception_ptr(CommTimeout(rank, dead.op, reason))
                                 : std::make_exception_ptr(CommError(rank, dead.op, reason)));
      lock.lock();
      continue;
    }
    // Ready: issued under the call mutex, taken without `mutex` (the order every call takes
    // them in). The head stays queued meanwhile, marked so that an abort leaves it be: no
    // caller issues before it.
    const std::uint64_t ready = head->id;
    lock.unlock();
    std::unique_lock call(call_mutex);
    lock.lock();
    if (queue.empty() || queue.front().id != ready) continue;  // an abort failed it meanwhile
    Queued& next = queue.front();
    next.issuing = true;
    spare_events.push_back(next.after);  // completed: recorded again by a later call
    lock.unlock();
    // Its callable holds what its buffers belong to (when_started's captures: an InputDist
    // batch, which its caller may have dropped): it goes with the operation to the watchdog
    // (Call::keep), which copies a staged result into those buffers once the GPU finished
    // it — after this entry left the queue.
    std::shared_ptr<std::function<void(Call&)>> enqueue;
    detail::Outcome outcome;
    try {
      enqueue = std::make_shared<std::function<void(Call&)>>(std::move(next.enqueue));
      outcome = detail::issue(
          *this, *next.stream, next.cuda, next.timeout, next.op, next.description, next.check,
          [&enqueue, seq = next.seq](Call& c) {
            c.keep = enqueue;
            c.seq = seq;
            (*enqueue)(c);
          },
          next.promise);
    } catch (...) {  // nothing may end this thread: the operation fails instead, and
      // whether its NCCL calls were enqueued is not known: the communicator is aborted
      outcome = {std::current_exception(), false, true};
    }
    Promise<void> promise = next.promise;
    call.unlock();
    enqueue.reset();  // holding no lock: it may be the last of what it captured
    lock.lock();
    queue.pop_front();  // only now: a caller that came meanwhile queued behind it
    advance();
    std::vector<std::shared_ptr<const void>> owners = owners_done();
    lock.unlock();
    owners.clear();
    // Completed last, holding nothing: a waiter resumed on this thread may call again.
    detail::complete(*this, promise, outcome);
    lock.lock();
  }
}

}  // namespace swp
