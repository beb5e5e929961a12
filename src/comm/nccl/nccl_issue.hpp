#pragma once
// How NcclCommunicator issues an operation (libswp-nccl's private header): a Call stages host
// buffers through device memory and hands the operation to the watchdog; a Turn keeps the call
// order (an operation waits for those called before it to be issued); run() issues one now,
// run_later() one that needs the stream's earlier results on the host, issued by the issuer
// thread (NcclCommunicator::Impl::issue_deferred).

#include <chrono>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "nccl_impl.hpp"
#include "swp/async/future.hpp"
#include "swp/device/stream.hpp"

namespace swp::detail {

// What one call enqueues: the stream, the device pointers to pass NCCL (staged through the
// pools where the caller's are host memory), and the copies back. Blocks it took and did not
// hand to the watchdog (a call that failed on the way) go back once the GPU is past them.
struct Call {
  NcclCommunicator::Impl& impl;
  Stream& swp_stream;
  cudaStream_t stream;
  std::string op;
  std::string description;
  std::vector<NcclCommunicator::Impl::Staged> staged;
  std::vector<detail::BlockPool::Block> scratch;
  // What the operation's buffers belong to, handed to the watchdog with it (Pending::keep):
  // a staged result is copied into its host buffer after the call returned.
  std::shared_ptr<const void> keep;
  std::uint64_t seq = 0;  // a deferred operation's (Queued::seq); else numbered at hand-over
  bool handed_over = false;

  Call(NcclCommunicator::Impl& i, Stream& s, cudaStream_t cuda, std::string o, std::string d)
      : impl(i), swp_stream(s), stream(cuda), op(std::move(o)), description(std::move(d)) {}
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  ~Call() { retire(); }

  // A device block of the scratch pool for `bytes`.
  void* scratch_block(std::size_t bytes);

  // A device pointer holding `bytes` of `p` (copied in, in stream order, when `p` is host
  // memory).
  void* device_in(const void* p, std::size_t bytes);
  // A device pointer for a result of `bytes` meant for `p`.
  void* device_out(void* p, std::size_t bytes);

  // A non-blocking communicator's operation is on the stream only once NCCL's state left
  // ncclInProgress: nothing may be queued behind it (copies out, the completion event)
  // before. CommTimeout when it stays in progress past the timeout (enqueue_call then aborts
  // the communicator), CommError for NCCL's error.
  void settle_enqueue() const;

  // After the NCCL calls: copies staged results out to pinned blocks, records the completion
  // event and hands the operation to the watchdog, which completes `promise` once the GPU
  // finished it — or, under NcclCompletion::submitted and with no result for the host, gives
  // `promise` its device event and returns true: the caller completes it, once it let go of
  // the communicator's locks (a waiter may be resumed on the completing thread).
  bool finish_call(Promise<void>& promise);

  // What a call that failed on the way took: given back once the GPU is past what it queued
  // (an entry without deadline for the watchdog), or kept for good when not even an event can
  // be recorded (a broken context: nothing may reuse them).
  void retire() noexcept;
};

// How an issued operation's future is to complete, which its caller does once it let go of
// the communicator's locks (completing a future may resume a waiter on that thread, and a
// waiter may call the communicator): failed with `error`, completed now (`submitted`: its
// device event set), or — neither — by the watchdog once the GPU finished it.
struct Outcome {
  std::exception_ptr error;
  bool submitted = false;
  // It failed after taking its place in the call order, before its NCCL calls were all
  // enqueued: the peers' part of it would pair with this rank's next operation (another
  // operation's data in their buffers), so complete() aborts the communicator first.
  bool unissued = false;
};

// Completes `promise` as `outcome` says (failed, completed now, or left to the watchdog);
// first, for an unissued operation, aborts the communicator with its error
// (Communicator::abort: the abort state's listeners run here, so no lock may be held).
void complete(NcclCommunicator::Impl& impl, Promise<void>& promise, const Outcome& outcome);

// The CUDA stream of `stream`, which must be a CUDA stream on this rank's GPU
// (std::invalid_argument naming it and `description` otherwise).
cudaStream_t cuda_stream_of(Stream& stream, const NcclCommunicator::Impl& impl,
                            const std::string& description);

// With the call mutex held: the operation's NCCL calls (`enqueue`) and its hand-over to the
// watchdog (with `promise`), once the abort state and an earlier failure are checked. An
// enqueue that NCCL keeps in progress past the timeout (a non-blocking communicator) aborts
// the communicator: nothing else may use it.
template <class Enqueue>
Outcome enqueue_call(NcclCommunicator::Impl& impl, Stream& stream, cudaStream_t s,
                     std::chrono::milliseconds timeout, std::string op, std::string description,
                     Enqueue&& enqueue, Promise<void> promise) {
  {
    std::lock_guard lock(impl.mutex);
    if (impl.aborts->aborted())  // since the caller looked
      return {impl.aborts->error(impl.rank, op, description, "was not run")};
    if (!impl.failure.empty())
      return {std::make_exception_ptr(
          CommError(impl.rank, op, description + " was not run: " + impl.failure))};
    impl.timeout_ms = timeout;
    ++impl.in_call;
  }
  struct Leave {
    NcclCommunicator::Impl& impl;
    ~Leave() {
      {
        std::lock_guard lock(impl.mutex);
        --impl.in_call;
      }
      impl.calls_done.notify_all();
    }
  };
  std::exception_ptr stuck;
  std::string why;
  {
    Leave leave{impl};
    bool enqueued = false;  // false: failing, this rank leaves the ranks' sequence (unissued)
    try {
      cudaSetDevice(impl.device->ordinal());
      Call c(impl, stream, s, op, description);
      enqueue(c);
      enqueued = true;
      return {nullptr, c.finish_call(promise)};
    } catch (const CommTimeout& e) {
      stuck = std::current_exception();
      why = e.what();
    } catch (const CommError&) {
      return {std::current_exception(), false, !enqueued};
    } catch (const std::exception& e) {  // out of memory, say: still this operation's error
      return {std::make_exception_ptr(CommError(impl.rank, op, description + ": " + e.what())),
              false, !enqueued};
    } catch (...) {  // a caller's callable (all_to_all_v's when_started) may throw anything
      return {std::make_exception_ptr(CommError(
                  impl.rank, op,
                  description + ": it threw an exception not derived from std::exception")),
              false, !enqueued};
    }
  }
  // Out of the call (an abort waits for calls to leave): abort it, as the watchdog does a
  // collective past its deadline.
  std::unique_lock lock(impl.mutex);
  impl.abort_all(lock, "the communicator was aborted: " + why);
  return {stuck};
}

// The order check on NCCL (Communicator::set_order_check): an ncclAllGather of what each rank
// is about to run, on the operation's stream, read on the host before the operation itself is
// enqueued — a CPU round trip per collective (a debugging aid, as on MPI). nullptr when every
// rank runs the same; otherwise the error that fails the operation on every rank: the
// mismatch, naming each rank's call, or the check's own failure (its timeout aborts the
// communicator, as any collective's does).
// Returns the outcome of the check's own all_gather where it failed (unissued: never
// enqueued on this rank).
Outcome check_order(NcclCommunicator::Impl& impl, Stream& stream, cudaStream_t s,
                    std::chrono::milliseconds timeout, const std::string& op,
                    const std::string& description, const std::string& check);

// With the call mutex held: the operation, issued — the ranks compare `check` first when the
// order check is on (check_order), then enqueue_call. The caller completes `promise` as the
// outcome says (complete()) once it let go of the call mutex.
template <class Enqueue>
Outcome issue(NcclCommunicator::Impl& impl, Stream& stream, cudaStream_t s,
              std::chrono::milliseconds timeout, const std::string& op,
              const std::string& description, const std::string& check, Enqueue&& enqueue,
              Promise<void> promise) {
  if (!check.empty())
    if (Outcome mismatch = check_order(impl, stream, s, timeout, op, description, check);
        mismatch.error)
      return mismatch;
  return enqueue_call(impl, stream, s, timeout, op, description, std::forward<Enqueue>(enqueue),
                      std::move(promise));
}

// A caller's turn to issue: the call mutex, and — while operations called before are still
// queued (an all_to_all_v waiting for its counts) — a place in the queue, waited for without
// the call mutex, up to twice the timeout (the issuer fails a stuck deferred operation, and
// aborts the communicator, at one). Holds the call mutex once constructed, in every case: a
// wait that ended in an abort lets the call fail at enqueue_call's check.
class Turn {
 public:
  using Queued = NcclCommunicator::Impl::Queued;

  Turn(NcclCommunicator::Impl& impl, std::chrono::milliseconds timeout, const std::string& what);
  ~Turn();
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;

 private:
  NcclCommunicator::Impl& impl_;
  std::unique_lock<std::mutex> call_;
  std::list<Queued>::iterator entry_;
  bool queued_ = false;
};

// Runs one operation: issued now, on the calling thread, in its turn (Turn) — so that the
// stream's later work runs after it. Returns its future.
template <class Enqueue>
Future<void> run(NcclCommunicator::Impl& impl, Stream& stream, std::chrono::milliseconds timeout,
                 std::string op, std::string description, std::string check, Enqueue&& enqueue) {
  const cudaStream_t s = cuda_stream_of(stream, impl, description);
  Promise<void> promise;
  Future<void> future = promise.get_future();
  Outcome outcome;
  {
    Turn turn(impl, timeout, description);
    outcome = issue(impl, stream, s, timeout, op, description, check,
                    std::forward<Enqueue>(enqueue), promise);
  }
  complete(impl, promise, outcome);
  return future;
}

// An operation that needs what the stream's earlier work gives the host (all_to_all_v with
// counts known when it starts): takes its place in the call order now and returns at once;
// the issuer thread issues it once that work completed and its results reached the host,
// without the call mutex meanwhile (no host wait under the communicator's lock). Operations
// called after it wait for it to be issued (Turn).
Future<void> run_later(NcclCommunicator::Impl& impl, Stream& stream,
                       std::chrono::milliseconds timeout, std::string op, std::string description,
                       std::string check, std::function<void(Call&)> enqueue);

}  // namespace swp::detail
