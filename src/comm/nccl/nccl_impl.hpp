#pragma once
// NcclCommunicator's state (libswp-nccl's private header): NCCL's communicator and the calls'
// lock, the staging pools, the operations the watchdog waits for and those queued to be issued
// in call order, and the abort state. Its watchdog (nccl_watchdog.cpp) completes what the GPU
// finished and aborts what did not in time; the issuing (nccl_issue.hpp) takes calls in order.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../abort_state.hpp"
#include "block_pool.hpp"
#include "nccl_api.hpp"
#include "swp/async/future.hpp"
#include "swp/comm/nccl/nccl_communicator.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/event.hpp"

namespace swp {

namespace detail {
struct Call;
}  // namespace detail

struct NcclCommunicator::Impl {
  using SteadyClock = detail::SteadyClock;
  using Call = detail::Call;

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
    // What its buffers belong to (a deferred operation's callable: when_started's captures),
    // kept until the GPU is past it and its staged results are delivered, then let go of
    // before its future completes, without `mutex` (its owner may hold anything).
    std::shared_ptr<const void> keep;
    std::uint64_t seq = 0;  // its place among the operations called (keep_until_done)
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
    std::uint64_t seq = 0;  // deferred: its place among the operations called, which it keeps
  };

  // What this communicator's aborts are recorded in (the base's; see abort_state()), and its
  // listener there.
  std::shared_ptr<detail::AbortState> aborts;
  std::uint64_t abort_listener = 0;

  // The staging pools: no allocation or free per operation once they hold what was in flight
  // at once (they free their blocks when the communicator goes).
  detail::BlockPool pinned{detail::pinned_block, [](void* p) { (void)cudaFreeHost(p); }};
  detail::BlockPool scratch{detail::device_block, [](void* p) { (void)cudaFree(p); }};

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
  // keep_until_done: each operation handed to the watchdog or queued to be issued takes a
  // number from next_seq when its call returns (a deferred one keeps its own once issued); an
  // owner kept with `before` = next_seq goes once no operation numbered below is pending,
  // queued, or `ending` (taken off those lists by the watchdog or an abort, not yet ended).
  struct Kept {
    std::uint64_t before = 0;
    std::shared_ptr<const void> owner;
  };
  std::uint64_t next_seq = 1;
  std::vector<Kept> kept;
  std::multiset<std::uint64_t> ending;
  // The timeout of NCCL's calls and of the operations' completion (Communicator::timeout(), as
  // the last call passed it: enqueue_call).
  std::chrono::milliseconds timeout_ms{60'000};

  // Stops the issuer and the watchdog, then ends NCCL's communicator (destroy_comm).
  ~Impl();

  // Ends NCCL's communicator: aborted when an abort was asked for, else finalized (within the
  // timeout, a non-blocking one) and destroyed.
  void destroy_comm();

  // The device events' last records are completed by their streams (the poller, or a host
  // function) shortly after the GPU got there, which the watchdog has seen for every
  // operation: waited for (bounded), since a stream's item points at its event.
  void settle_device_events();

  // A pooled CUDA event (timing disabled). With `mutex` not held.
  cudaEvent_t take_event(const std::string& op, const std::string& description);

  // A device event for a future (NcclCompletion::submitted): one whose last record is
  // reached (no stream waits for it any more), or a new one. With the call mutex held (one
  // taker at a time: it is recorded before the next call takes one).
  Event& take_device_event();

  // The abort's part here (a listener of `aborts`, on the thread that aborted or learned of
  // a peer's abort): hands the abort to the watchdog.
  void request_abort();

  // Starts the watchdog thread (watch()); the constructor of NcclCommunicator calls it.
  void start_watchdog();

  // Completes what the GPU finished, times out what passed its deadline, and fails
  // everything on an asynchronous NCCL error. Yields a few times, then sleeps 1 µs doubling
  // to 1 ms while something is pending; parks otherwise.
  void watch();

  // With `mutex` held: whether every operation the GPU has completed is finished, its staged
  // results copied into the caller's host buffers. The stream's completion says the GPU is
  // done, not that the watchdog delivered what it staged: a later call reading those buffers
  // on the host (all_to_all_v with counts read when it starts) must wait for this too.
  // Operations still running (on other streams) do not count.
  [[nodiscard]] bool delivered() const;

  // Finishes an operation the watchdog took off `pending`, with `mutex` not held: its results
  // delivered and its future completed (q: cudaSuccess), or failed as past its deadline
  // (cudaErrorNotReady: the communicator is aborted) or by the GPU's error.
  void finish(Pending& p, cudaError_t q);

  // With `mutex` held: aborts NCCL's communicator and fails every pending and queued
  // operation — with CommError, or CommAborted when Communicator::abort() (`by_abort`) is why.
  void abort_all(std::unique_lock<std::mutex>& lock, const std::string& reason,
                 bool by_abort = false);

  // With `mutex` held: the owners kept (keep_until_done) whose operations all ended, taken out
  // of `kept`; the caller lets go of them once it released the mutex (they may hold anything).
  [[nodiscard]] std::vector<std::shared_ptr<const void>> owners_done();

  // Gives an operation's blocks and event back; once the GPU is past them.
  void release(Pending& p);

  // The issuer: stops it (its loop ends at its next look) and fails what it did not issue.
  void stop_issuer();

  // With `mutex` held: tells the first queued operation that its turn came (a caller), or
  // the issuer (a deferred one).
  void advance();

  // The issuer thread's loop (see run_later()).
  void issue_deferred();
};

}  // namespace swp
