#include "swp/comm/nccl/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "../abort_state.hpp"
#include "../order_check.hpp"
#include "block_pool.hpp"
#include "nccl_wait.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_stream.hpp"
#include "swp/device/event.hpp"

namespace swp {

namespace {

using SteadyClock = std::chrono::steady_clock;

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId::bytes));

ncclDataType_t nccl_type(DataType type) {
  switch (type) {
    case DataType::u8:
      return ncclUint8;
    case DataType::i32:
      return ncclInt32;
    case DataType::i64:
      return ncclInt64;
    case DataType::f32:
      return ncclFloat32;
    case DataType::f64:
      return ncclFloat64;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::prod:
      return ncclProd;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

void check_nccl(ncclResult_t rc, int rank, const std::string& op, const std::string& doing) {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  throw CommError(rank, op, doing + " failed: " + ncclGetErrorString(rc));
}

void check_cuda(cudaError_t rc, int rank, const std::string& op, const std::string& doing) {
  if (rc == cudaSuccess) return;
  throw CommError(rank, op, doing + " failed: " + cudaGetErrorString(rc));
}

bool on_device(const void* p) {
  if (p == nullptr) return true;  // nothing to stage
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // an unregistered host pointer on older runtimes: clear the error
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

// detail::settle's query for `comm`: its state (ncclCommGetAsyncError).
auto state_of(ncclComm_t comm) {
  return [comm](ncclResult_t* state) { return ncclCommGetAsyncError(comm, state); };
}

// The staging pools' blocks: page-locked host memory (the GPU copies results into it) and
// device memory (host buffers' device side). Made on the calling thread's device, which the
// communicator's calls set first.
void* pinned_block(std::size_t bytes) {
  void* p = nullptr;
  if (const cudaError_t rc = cudaMallocHost(&p, bytes); rc != cudaSuccess)
    throw std::runtime_error("cudaMallocHost of " + std::to_string(bytes) +
                             " bytes failed: " + cudaGetErrorString(rc));
  return p;
}

void* device_block(std::size_t bytes) {
  void* p = nullptr;
  if (const cudaError_t rc = cudaMalloc(&p, bytes); rc != cudaSuccess)
    throw std::runtime_error("cudaMalloc of " + std::to_string(bytes) +
                             " bytes failed: " + cudaGetErrorString(rc));
  return p;
}

struct Call;

}  // namespace

NcclUniqueId NcclUniqueId::create() {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), -1, "ncclGetUniqueId", "ncclGetUniqueId");
  NcclUniqueId out;
  std::memcpy(out.bytes.data(), &id, sizeof id);
  return out;
}

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  CudaDevice* device = nullptr;
  int rank = 0;
  int size = 1;
  // Made non-blocking (init, bootstrap, from_file and their splits; not for_devices): NCCL's
  // calls on it may return before the operation is on its stream, and each is settled
  // (detail::settle) before anything is queued behind it.
  bool nonblocking = false;
  std::atomic<NcclCompletion> completion{NcclCompletion::finished};

  std::mutex call_mutex;  // NCCL communicators are not thread-safe; also the call order

  // A host buffer's way through device memory: its result copied out to a pinned block of
  // the pool in stream order after the operation, and from there to the caller's buffer by
  // the watchdog once the GPU is done.
  struct Staged {
    void* host_recv = nullptr;  // the caller's buffer
    void* device = nullptr;     // the result on the device (a scratch block)
    detail::BlockPool::Block pinned;
    std::size_t bytes = 0;
  };
  struct Pending {
    cudaEvent_t event = nullptr;  // recorded after the operation (pooled)
    Promise<void> promise;
    // Completed when it was enqueued (NcclCompletion::submitted): the watchdog only checks
    // that it finishes, and aborts the communicator when it does not.
    bool completed = false;
    // Nothing waits for it: the blocks of an operation that failed while it was enqueued,
    // given back once the GPU is past what was queued (no deadline).
    bool retire_only = false;
    SteadyClock::time_point deadline;
    std::string op;
    std::string description;
    std::vector<Staged> staged;
    std::vector<detail::BlockPool::Block> scratch;
  };

  // An operation called while operations before it are not issued yet (see run()): issued in
  // call order, by the issuer thread (`deferred`: an all_to_all_v that waits for its counts)
  // or by its caller once its turn came (`caller`).
  struct Queued {
    enum class Kind { deferred, caller };
    Kind kind = Kind::caller;
    std::uint64_t id = 0;  // deferred: which one (the issuer's look and its issue must agree)
    bool turn = false;     // caller: the operations before it are issued; it issues now
    bool issuing = false;  // deferred: the issuer is issuing it (an abort leaves it be)
    // deferred:
    Stream* stream = nullptr;
    cudaStream_t cuda = nullptr;
    cudaEvent_t after = nullptr;  // recorded on the stream when called: the work before it
    SteadyClock::time_point deadline;
    std::chrono::milliseconds timeout{0};
    std::string op;
    std::string description;
    std::string check;
    std::function<void(Call&)> enqueue;
    Promise<void> promise;
  };

  // What this communicator's aborts are recorded in (the base's; see abort_state()), and its
  // listener there.
  std::shared_ptr<detail::AbortState> aborts;
  std::uint64_t abort_listener = 0;

  // The staging pools: no allocation or free per operation once they hold what was in flight
  // at once (they free their blocks when the communicator goes).
  detail::BlockPool pinned{pinned_block, [](void* p) { (void)cudaFreeHost(p); }};
  detail::BlockPool scratch{device_block, [](void* p) { (void)cudaFree(p); }};

  std::mutex mutex;  // the fields below
  std::condition_variable wake;
  std::list<Pending> pending;
  std::list<Queued> queue;           // in call order
  std::condition_variable turns;     // callers in `queue` wait here for their turn
  std::condition_variable to_issue;  // the issuer waits here for a deferred operation
  std::thread issuer;                // started with the first deferred operation
  std::uint64_t deferred_ids = 0;
  bool stop_issuing = false;
  std::vector<cudaEvent_t> spare_events;  // completion and `after` events to record again
  // NcclCompletion::submitted: the futures' device events, recorded again once reached.
  std::vector<std::unique_ptr<Event>> device_events;
  std::string failure;   // set once the communicator is aborted: every later call fails
  bool aborted = false;  // ncclCommAbort was called: comm is gone
  // Communicator::abort() (this rank's, or a peer's through a communicator it aborts with)
  // asked the watchdog to abort: it does so on its own thread, so abort() never waits for
  // ncclCommAbort.
  std::shared_ptr<detail::AbortState> abort_by;
  int in_call = 0;  // calls between their failure check and the end of their enqueue
  std::condition_variable calls_done;
  int finishing = 0;                 // operations the watchdog took off `pending` and is finishing
  std::condition_variable finished;  // after each finish
  bool stopping = false;
  std::thread watchdog;

  ~Impl() {
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

  void destroy_comm() {
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

  // The device events' last records are completed by their streams (the poller, or a host
  // function) shortly after the GPU got there, which the watchdog has seen for every
  // operation: waited for (bounded), since a stream's item points at its event.
  void settle_device_events() {
    const auto deadline =
        SteadyClock::now() + std::max(timeout_ms, std::chrono::milliseconds(1000));
    detail::Backoff backoff;
    for (const auto& e : device_events)
      while (!e->query() && SteadyClock::now() < deadline) backoff.pause();
  }

  // A pooled CUDA event (timing disabled). With `mutex` not held.
  cudaEvent_t take_event(const std::string& op, const std::string& description) {
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

  // A device event for a future (NcclCompletion::submitted): one whose last record is
  // reached (no stream waits for it any more), or a new one. With the call mutex held (one
  // taker at a time: it is recorded before the next call takes one).
  Event& take_device_event() {
    std::lock_guard lock(mutex);
    for (const auto& e : device_events)
      if (e->query()) return *e;
    device_events.push_back(device->make_event());
    return *device_events.back();
  }

  // The abort's part here (a listener of `aborts`, on the thread that aborted or learned of
  // a peer's abort): hands the abort to the watchdog.
  void request_abort() {
    {
      std::lock_guard lock(mutex);
      abort_by = aborts;
    }
    wake.notify_all();
    turns.notify_all();
  }

  void start_watchdog() {
    watchdog = std::thread([this] { watch(); });
  }

  // Completes what the GPU finished, times out what passed its deadline, and fails
  // everything on an asynchronous NCCL error. Yields a few times, then sleeps 1 µs doubling
  // to 1 ms while something is pending; parks otherwise.
  void watch() {
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
        progressed = true;
        ++finishing;
        lock.unlock();
        finish(done, q);
        lock.lock();
        --finishing;
        finished.notify_all();
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

  // With `mutex` held: whether every operation the GPU has completed is finished, its staged
  // results copied into the caller's host buffers. The stream's completion says the GPU is
  // done, not that the watchdog delivered what it staged: a later call reading those buffers
  // on the host (all_to_all_v with counts read when it starts) must wait for this too.
  // Operations still running (on other streams) do not count.
  [[nodiscard]] bool delivered() const {
    if (finishing > 0) return false;
    for (const Pending& p : pending)
      if (cudaEventQuery(p.event) == cudaSuccess) return false;
    return true;
  }

  void finish(Pending& p, cudaError_t q) {
    if (q == cudaSuccess) {
      for (const Staged& s : p.staged)
        if (s.host_recv != nullptr) std::memcpy(s.host_recv, s.pinned.data, s.bytes);
      release(p);
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
      if (!p.completed)
        p.promise.set_error(std::make_exception_ptr(CommTimeout(rank, p.op, reason)));
      return;
    }
    const std::string reason = p.description + " failed on the GPU: " + cudaGetErrorString(q);
    if (p.completed) {
      // Its future completed when it was enqueued: what comes after it learns of it.
      std::unique_lock lock(mutex);
      abort_all(lock, "the communicator was aborted: " + reason);
    }
    release(p);
    if (!p.completed && !p.retire_only)
      p.promise.set_error(std::make_exception_ptr(CommError(rank, p.op, reason)));
  }

  // With `mutex` held: aborts NCCL's communicator and fails every pending and queued
  // operation — with CommError, or CommAborted when Communicator::abort() (`by_abort`) is why.
  void abort_all(std::unique_lock<std::mutex>& lock, const std::string& reason,
                 bool by_abort = false) {
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
      if (!p.completed && !p.retire_only) p.promise.set_error(error(p.op, p.description, "failed"));
    }
    for (Queued& q : unissued) {
      (void)cudaEventDestroy(q.after);  // its stream's work may never end: not recorded again
      q.promise.set_error(error(q.op, q.description, "was not run"));
    }
    lock.lock();
  }

  // Gives an operation's blocks and event back; once the GPU is past them.
  void release(Pending& p) {
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

  // The issuer: stops it (its loop ends at its next look) and fails what it did not issue.
  void stop_issuer() {
    {
      std::lock_guard lock(mutex);
      stop_issuing = true;
    }
    to_issue.notify_all();
    if (issuer.joinable()) issuer.join();
    std::list<Queued> left;
    {
      std::lock_guard lock(mutex);
      left.swap(queue);  // deferred only: callers are gone before the communicator
    }
    for (Queued& q : left) {
      (void)cudaEventDestroy(q.after);
      q.promise.set_error(std::make_exception_ptr(CommError(
          rank, q.op, q.description + " was not run: the communicator was destroyed first")));
    }
  }

  // With `mutex` held: tells the first queued operation that its turn came (a caller), or
  // the issuer (a deferred one).
  void advance() {
    if (queue.empty()) return;
    if (queue.front().kind == Queued::Kind::caller) {
      queue.front().turn = true;
      turns.notify_all();
    } else {
      to_issue.notify_all();
    }
  }

  // The issuer thread's loop (see run_later()).
  void issue_deferred();

  std::chrono::milliseconds timeout_ms{60'000};
};

namespace {

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
  bool handed_over = false;

  Call(NcclCommunicator::Impl& i, Stream& s, cudaStream_t cuda, std::string o, std::string d)
      : impl(i), swp_stream(s), stream(cuda), op(std::move(o)), description(std::move(d)) {}
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  ~Call() { retire(); }

  // A device block of the scratch pool for `bytes`.
  void* scratch_block(std::size_t bytes) {
    try {
      scratch.push_back(impl.scratch.take(bytes));
    } catch (const std::exception& e) {
      throw CommError(impl.rank, op, description + ": staging it: " + e.what());
    }
    return scratch.back().data;
  }

  // A device pointer holding `bytes` of `p` (copied in, in stream order, when `p` is host
  // memory).
  void* device_in(const void* p, std::size_t bytes) {
    if (bytes == 0 || on_device(p)) return const_cast<void*>(p);
    void* d = scratch_block(bytes);
    check_cuda(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, stream), impl.rank, op,
               description + ": staging its input");
    return d;
  }
  // A device pointer for a result of `bytes` meant for `p`.
  void* device_out(void* p, std::size_t bytes) {
    if (bytes == 0 || on_device(p)) return p;
    void* d = scratch_block(bytes);
    NcclCommunicator::Impl::Staged s;
    s.host_recv = p;
    s.device = d;
    s.bytes = bytes;
    staged.push_back(s);
    return d;
  }

  // A non-blocking communicator's operation is on the stream only once NCCL's state left
  // ncclInProgress: nothing may be queued behind it (copies out, the completion event)
  // before. CommTimeout when it stays in progress past the timeout (enqueue_call then aborts
  // the communicator), CommError for NCCL's error.
  void settle_enqueue() const {
    if (!impl.nonblocking) return;
    detail::settle_enqueued(state_of(impl.comm), impl.rank, op, description, impl.timeout_ms);
  }

  // After the NCCL calls: copies staged results out to pinned blocks, records the completion
  // event and hands the operation to the watchdog, which completes `promise` once the GPU
  // finished it — or, under NcclCompletion::submitted and with no result for the host, gives
  // `promise` its device event and returns true: the caller completes it, once it let go of
  // the communicator's locks (a waiter may be resumed on the completing thread).
  bool finish_call(Promise<void>& promise) {
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
    staged.clear();
    scratch.clear();
    handed_over = true;
    {
      std::lock_guard lock(impl.mutex);
      impl.pending.push_back(std::move(p));
    }
    impl.wake.notify_all();
    return early;
  }

  // What a call that failed on the way took: given back once the GPU is past what it queued
  // (an entry without deadline for the watchdog), or kept for good when not even an event can
  // be recorded (a broken context: nothing may reuse them).
  void retire() noexcept {
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
      std::lock_guard lock(impl.mutex);
      impl.pending.push_back(std::move(p));
    } catch (...) {
      // Out of memory for the entry: the blocks stay out of the pools.
    }
    impl.wake.notify_all();
  }
};

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

// How an issued operation's future is to complete, which its caller does once it let go of
// the communicator's locks (completing a future may resume a waiter on that thread, and a
// waiter may call the communicator): failed with `error`, completed now (`submitted`: its
// device event set), or — neither — by the watchdog once the GPU finished it.
struct Outcome {
  std::exception_ptr error;
  bool submitted = false;
};

void complete(Promise<void>& promise, const Outcome& outcome) {
  if (outcome.error) {
    promise.set_error(outcome.error);
  } else if (outcome.submitted) {
    promise.set_value();
  }
}

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
    try {
      cudaSetDevice(impl.device->ordinal());
      Call c(impl, stream, s, op, description);
      enqueue(c);
      return {nullptr, c.finish_call(promise)};
    } catch (const CommTimeout& e) {
      stuck = std::current_exception();
      why = e.what();
    } catch (const CommError&) {
      return {std::current_exception()};
    } catch (const std::exception& e) {  // out of memory, say: still this operation's error
      return {std::make_exception_ptr(CommError(impl.rank, op, description + ": " + e.what()))};
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
std::exception_ptr check_order(NcclCommunicator::Impl& impl, Stream& stream, cudaStream_t s,
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
  if (outcome.error) return outcome.error;
  // The watchdog completes it (its result is for the host: the descriptors copied into `all`
  // first) or fails it by its deadline; outside the call, so that a timeout's abort does not
  // wait for this thread.
  detail::Backoff backoff;
  while (!gathered.ready()) backoff.pause();
  if (gathered.error_ptr()) return gathered.error_ptr();
  if (detail::same_everywhere(all, mine)) return nullptr;
  return std::make_exception_ptr(
      CommError(impl.rank, op, description + detail::order_mismatch(all)));
}

// With the call mutex held: the operation, issued — the ranks compare `check` first when the
// order check is on (check_order), then enqueue_call. The caller completes `promise` as the
// outcome says (complete()) once it let go of the call mutex.
template <class Enqueue>
Outcome issue(NcclCommunicator::Impl& impl, Stream& stream, cudaStream_t s,
              std::chrono::milliseconds timeout, const std::string& op,
              const std::string& description, const std::string& check, Enqueue&& enqueue,
              Promise<void> promise) {
  if (!check.empty())
    if (auto mismatch = check_order(impl, stream, s, timeout, op, description, check))
      return {std::move(mismatch)};
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

  Turn(NcclCommunicator::Impl& impl, std::chrono::milliseconds timeout, const std::string& what)
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
      impl.abort_all(lock, "the communicator was aborted: rank " + std::to_string(impl.rank) +
                               ": " + what + " waited " + std::to_string(2 * timeout.count()) +
                               " ms for the operations called before it to be issued");
    lock.unlock();
    call_.lock();
  }
  ~Turn() {
    if (!queued_) return;
    std::lock_guard lock(impl_.mutex);
    impl_.queue.erase(entry_);
    impl_.advance();
  }
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
  complete(promise, outcome);
  return future;
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
    impl.queue.push_back(std::move(q));
    if (!impl.issuer.joinable()) impl.issuer = std::thread([&impl] { impl.issue_deferred(); });
    if (impl.queue.size() == 1) impl.advance();
  }
  return future;
}

}  // namespace

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
    Outcome outcome;
    try {
      outcome = issue(*this, *next.stream, next.cuda, next.timeout, next.op, next.description,
                      next.check, next.enqueue, next.promise);
    } catch (...) {  // nothing may end this thread: the operation fails instead
      outcome = {std::current_exception()};
    }
    Promise<void> promise = next.promise;
    call.unlock();
    lock.lock();
    queue.pop_front();  // only now: a caller that came meanwhile queued behind it
    advance();
    lock.unlock();
    // Completed last, holding nothing: a waiter resumed on this thread may call again.
    complete(promise, outcome);
    lock.lock();
  }
}

namespace {

std::size_t bytes_of(std::size_t count, DataType type) { return count * size_of(type); }

// What the order check compares for a collective described as `description` (see
// detail::check_text), or nothing when `comm`'s order check is off.
std::string order_check_text(const Communicator& comm, const std::string& description,
                             bool with_count) {
  return comm.order_check() ? detail::check_text(description, with_count) : std::string();
}

// The grouped sends and receives of an all_to_all_v (NCCL has no all_to_all_v).
void enqueue_all_to_all_v(Call& c, const void* send, std::span<const std::size_t> send_counts,
                          void* recv, std::span<const std::size_t> recv_counts, DataType type) {
  std::size_t send_total = 0, recv_total = 0;
  for (std::size_t n : send_counts) send_total += n;
  for (std::size_t n : recv_counts) recv_total += n;
  const auto* in = static_cast<const char*>(c.device_in(send, bytes_of(send_total, type)));
  auto* out = static_cast<char*>(c.device_out(recv, bytes_of(recv_total, type)));
  ncclComm_t comm = c.impl.comm;
  check_nccl(ncclGroupStart(), c.impl.rank, c.op, c.description + ": ncclGroupStart");
  std::size_t send_at = 0, recv_at = 0;
  for (std::size_t r = 0; r < send_counts.size(); ++r) {
    const int peer = static_cast<int>(r);
    check_nccl(ncclSend(in + bytes_of(send_at, type), send_counts[r], nccl_type(type), peer, comm,
                        c.stream),
               c.impl.rank, c.op, c.description + ": ncclSend");
    check_nccl(ncclRecv(out + bytes_of(recv_at, type), recv_counts[r], nccl_type(type), peer, comm,
                        c.stream),
               c.impl.rank, c.op, c.description + ": ncclRecv");
    send_at += send_counts[r];
    recv_at += recv_counts[r];
  }
  check_nccl(ncclGroupEnd(), c.impl.rank, c.op, c.description + ": ncclGroupEnd");
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->start_watchdog();
  abort_with(abort_state());
}

NcclCommunicator::~NcclCommunicator() { impl_->aborts->unlisten(impl_->abort_listener); }

void NcclCommunicator::abort_with(std::shared_ptr<detail::AbortState> state) {
  if (impl_->aborts) impl_->aborts->unlisten(impl_->abort_listener);
  adopt_abort_state(state);
  impl_->aborts = std::move(state);
  impl_->abort_listener = impl_->aborts->listen(
      [impl = impl_.get()](const detail::AbortState::Info&, bool) { impl->request_abort(); });
}

void NcclCommunicator::set_completion(NcclCompletion completion) noexcept {
  impl_->completion.store(completion, std::memory_order_relaxed);
}

NcclCompletion NcclCommunicator::completion() const noexcept {
  return impl_->completion.load(std::memory_order_relaxed);
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::init(const NcclUniqueId& id, int rank, int size,
                                                         CudaDevice& device,
                                                         std::chrono::milliseconds timeout) {
  if (size < 1 || rank < 0 || rank >= size)
    throw std::invalid_argument("NcclCommunicator::init: rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + " ranks");
  auto impl = std::make_unique<Impl>();
  impl->device = &device;
  impl->rank = rank;
  impl->size = size;
  ncclUniqueId nccl_id;
  std::memcpy(&nccl_id, id.bytes.data(), sizeof nccl_id);
  check_cuda(cudaSetDevice(device.ordinal()), rank, "init", "cudaSetDevice");
  // Non-blocking, so that this thread can give up: ncclCommInitRank waits for every rank
  // without a deadline, forever where one never comes (it failed, was not started, or read a
  // stale id).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const auto deadline = SteadyClock::now() + timeout;
  const std::string who = "rank " + std::to_string(rank) + ": ";
  const ncclResult_t rc = ncclCommInitRankConfig(&impl->comm, size, nccl_id, rank, &config);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    if (impl->comm != nullptr) ncclCommAbort(impl->comm);
    impl->comm = nullptr;
    throw CommError(rank, "init", who + "ncclCommInitRankConfig failed: " + ncclGetErrorString(rc));
  }
  try {
    ncclComm_t comm = impl->comm;
    detail::await_ready(
        state_of(comm), [comm] { ncclCommAbort(comm); }, rank, "init", "ncclCommInitRankConfig",
        timeout, deadline,
        "not every one of the " + std::to_string(size) +
            " ranks joined with this id (one failed or was not started, or read "
            "a stale id)");
  } catch (...) {
    impl->comm = nullptr;  // aborted
    throw;
  }
  impl->nonblocking = true;
  return std::make_unique<NcclCommunicator>(std::move(impl));
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::bootstrap(Communicator& over, Stream& stream,
                                                              CudaDevice& device) {
  NcclUniqueId mine;
  if (over.rank() == 0) mine = NcclUniqueId::create();
  std::vector<char> all(mine.bytes.size() * static_cast<std::size_t>(over.size()));
  auto shared = over.all_gather(stream, mine.bytes.data(), all.data(), mine.bytes.size(),
                                DataType::u8, "NCCL bootstrap");
  stream.synchronize();
  shared.get();
  NcclUniqueId id;
  std::memcpy(id.bytes.data(), all.data(), id.bytes.size());  // rank 0's
  auto nccl = init(id, over.rank(), over.size(), device, over.timeout());
  // NCCL cannot tell its peers of an abort: `over` (MPI) can, and its peers' communicators
  // bootstrapped so abort with theirs.
  nccl->abort_with(abort_state_of(over));
  return nccl;
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::from_file(const std::filesystem::path& path,
                                                              int rank, int size,
                                                              CudaDevice& device,
                                                              std::chrono::milliseconds timeout) {
  NcclUniqueId id;
  if (rank == 0) {
    id = NcclUniqueId::create();
    const std::filesystem::path tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(id.bytes.data(), static_cast<std::streamsize>(id.bytes.size()));
      if (!out)
        throw CommError(rank, "from_file", "rank 0: cannot write the NCCL id to " + tmp.string());
    }
    std::filesystem::rename(tmp, path);
  } else {
    const auto deadline = SteadyClock::now() + timeout;
    while (true) {
      std::ifstream in(path, std::ios::binary);
      if (in.read(id.bytes.data(), static_cast<std::streamsize>(id.bytes.size()))) break;
      if (SteadyClock::now() >= deadline)
        throw CommTimeout(rank, "from_file",
                          "rank " + std::to_string(rank) + ": the NCCL id did not appear in " +
                              path.string() + " within " + std::to_string(timeout.count()) +
                              " ms (rank 0 writes it)");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return init(id, rank, size, device, timeout);
}
std::vector<std::unique_ptr<NcclCommunicator>> NcclCommunicator::for_devices(
    std::span<CudaDevice* const> devices) {
  std::vector<int> ordinals;
  for (CudaDevice* d : devices) ordinals.push_back(d->ordinal());
  std::vector<ncclComm_t> comms(devices.size());
  check_nccl(ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), ordinals.data()), -1,
             "init", "ncclCommInitAll");
  std::vector<std::unique_ptr<NcclCommunicator>> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    auto impl = std::make_unique<Impl>();
    impl->comm = comms[i];
    impl->device = devices[i];
    impl->rank = static_cast<int>(i);
    impl->size = static_cast<int>(devices.size());
    out.push_back(std::make_unique<NcclCommunicator>(std::move(impl)));
    // The ranks of one process abort together: one rank's abort reaches the others here.
    if (i > 0) out.back()->abort_with(abort_state_of(*out.front()));
  }
  return out;
}

int NcclCommunicator::rank() const noexcept { return impl_->rank; }
int NcclCommunicator::size() const noexcept { return impl_->size; }
CudaDevice& NcclCommunicator::device() const noexcept { return *impl_->device; }

std::unique_ptr<Communicator> NcclCommunicator::split(std::span<const int>) {
  throw std::logic_error(
      "rank " + std::to_string(rank()) +
      ": NCCL communicators split collectively (every rank calls): use split_by_color, or "
      "bootstrap an NcclCommunicator over an MPI process group (MpiCommunicator::split)");
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::split_by_color(int color) {
  if (aborted())  // ncclCommSplit on an aborted communicator would use a freed one
    std::rethrow_exception(abort_state()->error(
        rank(), "split", "rank " + std::to_string(rank()) + ": split", "was not run"));
  // A collective of the parent: in its call order, after what was called before.
  const std::string what = "rank " + std::to_string(rank()) + ": split";
  Turn turn(*impl_, timeout(), what);
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->aborts->aborted())
      std::rethrow_exception(impl_->aborts->error(rank(), "split", what, "was not run"));
    if (!impl_->failure.empty())
      throw CommError(rank(), "split", what + " was not run: " + impl_->failure);
  }
  auto impl = std::make_unique<Impl>();
  impl->device = impl_->device;
  cudaSetDevice(impl_->device->ordinal());
  // A non-blocking parent makes a non-blocking group (NCCL: a null config inherits the
  // parent's), which is ready only once its state left ncclInProgress.
  const auto deadline = SteadyClock::now() + timeout();
  check_nccl(ncclCommSplit(impl_->comm, color, impl_->rank, &impl->comm, nullptr), impl_->rank,
             "split", "rank " + std::to_string(impl_->rank) + ": ncclCommSplit");
  if (impl_->nonblocking) {
    try {
      ncclComm_t group = impl->comm;
      detail::await_ready(
          state_of(group), [group] { ncclCommAbort(group); }, impl_->rank, "split", "ncclCommSplit",
          timeout(), deadline,
          "not every rank of the communicator split it (each must call "
          "split_by_color)");
    } catch (...) {
      impl->comm = nullptr;  // aborted
      throw;
    }
    impl->nonblocking = true;
    // The parent takes part in the split too: settled before its next operation (an error
    // shows there).
    (void)detail::settle(state_of(impl_->comm), deadline);
  }
  check_nccl(ncclCommUserRank(impl->comm, &impl->rank), impl_->rank, "split", "ncclCommUserRank");
  check_nccl(ncclCommCount(impl->comm, &impl->size), impl_->rank, "split", "ncclCommCount");
  auto group = std::make_unique<NcclCommunicator>(std::move(impl));
  group->set_timeout(timeout());
  group->set_completion(completion());
  group->abort_with(abort_state());  // a group aborts with the communicator it came from
  return group;
}

Future<void> NcclCommunicator::do_all_reduce(Stream& stream, const void* send, void* recv,
                                             std::size_t count, DataType type, ReduceOp op,
                                             std::string_view what) {
  const std::string description = describe("all_reduce", what, count, type);
  return run(*impl_, stream, timeout(), "all_reduce", description,
             order_check_text(*this, description, true), [&](Call& c) {
               const void* in = c.device_in(send, bytes_of(count, type));
               void* out = c.device_out(recv, bytes_of(count, type));
               check_nccl(ncclAllReduce(in, out, count, nccl_type(type), nccl_op(op), c.impl.comm,
                                        c.stream),
                          c.impl.rank, c.op, c.description + ": ncclAllReduce");
             });
}

Future<void> NcclCommunicator::do_all_gather(Stream& stream, const void* send, void* recv,
                                             std::size_t count, DataType type,
                                             std::string_view what) {
  const std::string description = describe("all_gather", what, count, type);
  return run(*impl_, stream, timeout(), "all_gather", description,
             order_check_text(*this, description, true), [&](Call& c) {
               const void* in = c.device_in(send, bytes_of(count, type));
               void* out =
                   c.device_out(recv, bytes_of(count * static_cast<std::size_t>(size()), type));
               check_nccl(ncclAllGather(in, out, count, nccl_type(type), c.impl.comm, c.stream),
                          c.impl.rank, c.op, c.description + ": ncclAllGather");
             });
}

Future<void> NcclCommunicator::do_all_to_all(Stream& stream, const void* send, void* recv,
                                             std::size_t count, DataType type,
                                             std::string_view what) {
  const std::vector<std::size_t> counts(static_cast<std::size_t>(size()), count);
  const std::string description = describe("all_to_all", what, count, type);
  return run(*impl_, stream, timeout(), "all_to_all", description,
             order_check_text(*this, description, true),
             [&](Call& c) { enqueue_all_to_all_v(c, send, counts, recv, counts, type); });
}

Future<void> NcclCommunicator::do_all_to_all_v(Stream& stream, const void* send,
                                               std::span<const std::size_t> send_counts, void* recv,
                                               std::span<const std::size_t> recv_counts,
                                               DataType type, std::string_view what) {
  const auto ranks = static_cast<std::size_t>(size());
  require(send_counts.size() == ranks && recv_counts.size() == ranks, "all_to_all_v", what,
          "one send count and one receive count per rank");
  const std::string description = describe("all_to_all_v", what, total(send_counts), type);
  return run(*impl_, stream, timeout(), "all_to_all_v", description,
             order_check_text(*this, description, false),
             [&](Call& c) { enqueue_all_to_all_v(c, send, send_counts, recv, recv_counts, type); });
}

Future<void> NcclCommunicator::do_all_to_all_v_later(Stream& stream,
                                                     std::function<AllToAllVBuffers()> when_started,
                                                     DataType type, std::string_view what) {
  const std::string description = describe("all_to_all_v", what, 0, type);
  const std::string named =
      description.substr(0, description.rfind(" (")) + " (" + std::string(name_of(type)) + ")";
  // The counts must be on the host: issued once the stream's earlier work (the splits) is
  // done and delivered, by the issuer thread (run_later).
  return run_later(
      *impl_, stream, timeout(), "all_to_all_v", named, order_check_text(*this, description, false),
      [this, when_started = std::move(when_started), type, named](Call& c) {
        AllToAllVBuffers b;
        try {
          b = when_started();
        } catch (const CommError&) {
          throw;
        } catch (const std::exception& e) {
          throw CommError(c.impl.rank, c.op, named + " failed as it started: " + e.what());
        }
        require_counts(b, named);
        enqueue_all_to_all_v(c, b.send, b.send_counts, b.recv, b.recv_counts, type);
      });
}

Future<void> NcclCommunicator::do_send(Stream& stream, const void* data, std::size_t count,
                                       DataType type, int peer, std::string_view what) {
  require(peer >= 0 && peer < size(), "send", what,
          "peer " + std::to_string(peer) + " is not a rank of this communicator");
  // Point to point: no order check (as on MPI).
  return run(*impl_, stream, timeout(), "send",
             describe("send to rank " + std::to_string(peer), what, count, type), {}, [&](Call& c) {
               const void* in = c.device_in(data, bytes_of(count, type));
               check_nccl(ncclSend(in, count, nccl_type(type), peer, c.impl.comm, c.stream),
                          c.impl.rank, c.op, c.description + ": ncclSend");
             });
}

Future<void> NcclCommunicator::do_recv(Stream& stream, void* data, std::size_t count, DataType type,
                                       int peer, std::string_view what) {
  require(peer >= 0 && peer < size(), "recv", what,
          "peer " + std::to_string(peer) + " is not a rank of this communicator");
  return run(*impl_, stream, timeout(), "recv",
             describe("recv from rank " + std::to_string(peer), what, count, type), {},
             [&](Call& c) {
               void* out = c.device_out(data, bytes_of(count, type));
               check_nccl(ncclRecv(out, count, nccl_type(type), peer, c.impl.comm, c.stream),
                          c.impl.rank, c.op, c.description + ": ncclRecv");
             });
}

}  // namespace swp
