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
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/cuda_stream.hpp"

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

  std::mutex call_mutex;  // NCCL communicators are not thread-safe; also the call order

  // A host buffer's way through device memory: copied in before the operation, out after.
  struct Staged {
    void* host_recv = nullptr;  // the caller's buffer, filled from `bounce` on completion
    void* bounce = nullptr;     // pinned: the GPU copies the result here
    std::size_t bytes = 0;
  };
  struct Pending {
    cudaEvent_t event = nullptr;
    Promise<void> promise;
    SteadyClock::time_point deadline;
    std::string op;
    std::string description;
    std::vector<Staged> staged;
  };

  // What this communicator's aborts are recorded in (the base's; see abort_state()), and its
  // listener there.
  std::shared_ptr<detail::AbortState> aborts;
  std::uint64_t abort_listener = 0;

  std::mutex mutex;  // the fields below
  std::condition_variable wake;
  std::list<Pending> pending;
  std::string failure;   // set once the communicator is aborted: every later call fails
  bool aborted = false;  // ncclCommAbort was called: comm is gone
  // Communicator::abort() (this rank's, or a peer's through a communicator it aborts with)
  // asked the watchdog to abort: it does so on its own thread, so abort() never waits for
  // ncclCommAbort.
  std::shared_ptr<detail::AbortState> abort_by;
  int in_call = 0;       // calls between their failure check and the end of their enqueue
  std::condition_variable calls_done;
  int finishing = 0;  // operations the watchdog took off `pending` and is finishing
  std::condition_variable finished;  // after each finish
  bool stopping = false;
  std::thread watchdog;

  ~Impl() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (watchdog.joinable()) watchdog.join();
    // Aborted before the watchdog got to it: ncclCommDestroy would wait for collectives the
    // peers gave up.
    if (comm != nullptr && !aborted) (abort_by ? ncclCommAbort : ncclCommDestroy)(comm);
  }

  // The abort's part here (a listener of `aborts`, on the thread that aborted or learned of
  // a peer's abort): hands the abort to the watchdog.
  void request_abort() {
    {
      std::lock_guard lock(mutex);
      abort_by = aborts;
    }
    wake.notify_all();
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

  // With `mutex` held, once a stream synchronized: waits until every operation the GPU has
  // completed is finished, its staged results copied into the caller's host buffers. The
  // stream's completion says the GPU is done, not that the watchdog delivered what it staged:
  // without this wait a later call reading those buffers on the host (all_to_all_v with counts
  // read when it starts) could see them unwritten. Operations still running on other streams
  // are not waited for.
  void await_delivered(std::unique_lock<std::mutex>& lock) {
    const auto delivered = [&] {
      if (finishing > 0) return false;
      for (const Pending& p : pending)
        if (cudaEventQuery(p.event) == cudaSuccess) return false;
      return true;
    };
    while (!delivered()) {
      wake.notify_all();  // the watchdog may be sleeping between polls
      finished.wait_for(lock, std::chrono::milliseconds(1));
    }
  }

  void finish(Pending& p, cudaError_t q) {
    if (q == cudaSuccess) {
      for (const Staged& s : p.staged)
        if (s.host_recv != nullptr) std::memcpy(s.host_recv, s.bounce, s.bytes);
      release(p);
      p.promise.set_value();
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
      // The aborted kernels end: the event completes, its scratch can go.
      cudaEventSynchronize(p.event);
      release(p);
      p.promise.set_error(std::make_exception_ptr(CommTimeout(rank, p.op, reason)));
      return;
    }
    release(p);
    p.promise.set_error(std::make_exception_ptr(
        CommError(rank, p.op, p.description + " failed on the GPU: " + cudaGetErrorString(q))));
  }

  // With `mutex` held: aborts NCCL's communicator and fails every pending operation — with
  // CommError, or CommAborted when Communicator::abort() (`by_abort`) is why.
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
    const std::shared_ptr<detail::AbortState> by = by_abort ? abort_by : nullptr;
    lock.unlock();
    for (Pending& p : failed) {
      cudaEventSynchronize(p.event);
      release(p);
      p.promise.set_error(by ? by->error(rank, p.op, p.description, "failed")
                             : std::make_exception_ptr(
                                   CommError(rank, p.op, p.description + " failed: " + reason)));
    }
    lock.lock();
  }

  static void release(Pending& p) {
    for (const Staged& s : p.staged)
      if (s.bounce != nullptr) cudaFreeHost(s.bounce);
    p.staged.clear();
    if (p.event != nullptr) cudaEventDestroy(p.event);
    p.event = nullptr;
  }

  std::chrono::milliseconds timeout_ms{60'000};
};

namespace {

// What one call enqueues: the stream, the device pointers to pass NCCL (staged where the
// caller's are host memory), and the copies back.
struct Call {
  NcclCommunicator::Impl& impl;
  cudaStream_t stream;
  std::string op;
  std::string description;
  std::vector<NcclCommunicator::Impl::Staged> staged;
  std::vector<void*> scratch;  // device memory freed in stream order after the operation

  // A device pointer holding `bytes` of `p` (copied in when `copy_in`).
  void* device_in(const void* p, std::size_t bytes) {
    if (bytes == 0 || on_device(p)) return const_cast<void*>(p);
    void* d = nullptr;
    check_cuda(cudaMallocAsync(&d, bytes, stream), impl.rank, op,
               description + ": cudaMallocAsync");
    scratch.push_back(d);
    check_cuda(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, stream), impl.rank, op,
               description + ": staging its input");
    return d;
  }
  // A device pointer for a result of `bytes` meant for `p`.
  void* device_out(void* p, std::size_t bytes) {
    if (bytes == 0 || on_device(p)) return p;
    void* d = nullptr;
    check_cuda(cudaMallocAsync(&d, bytes, stream), impl.rank, op,
               description + ": cudaMallocAsync");
    scratch.push_back(d);
    NcclCommunicator::Impl::Staged s;
    s.host_recv = p;
    s.bytes = bytes;
    s.bounce = d;  // the device side until the copy out is queued (finish_call)
    staged.push_back(s);
    return d;
  }

  // After the NCCL calls: copies staged results out to pinned bounce buffers, frees scratch,
  // records the completion event and hands the operation to the watchdog.
  Future<void> finish_call() {
    for (auto& s : staged) {
      void* device = s.bounce;
      void* pinned = nullptr;
      check_cuda(cudaMallocHost(&pinned, s.bytes), impl.rank, op, description + ": cudaMallocHost");
      s.bounce = pinned;
      check_cuda(cudaMemcpyAsync(pinned, device, s.bytes, cudaMemcpyDeviceToHost, stream),
                 impl.rank, op, description + ": copying its result out");
    }
    for (void* d : scratch) cudaFreeAsync(d, stream);
    NcclCommunicator::Impl::Pending p;
    check_cuda(cudaEventCreateWithFlags(&p.event, cudaEventDisableTiming), impl.rank, op,
               description + ": cudaEventCreate");
    check_cuda(cudaEventRecord(p.event, stream), impl.rank, op, description + ": cudaEventRecord");
    Future<void> future = p.promise.get_future();
    p.deadline = SteadyClock::now() + impl.timeout_ms;
    p.op = op;
    p.description = description;
    p.staged = std::move(staged);
    {
      std::lock_guard lock(impl.mutex);
      impl.pending.push_back(std::move(p));
    }
    impl.wake.notify_all();
    return future;
  }
};

Future<void> failed(std::exception_ptr e) {
  Promise<void> p;
  Future<void> f = p.get_future();
  p.set_error(std::move(e));
  return f;
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

// Runs `enqueue` (the NCCL calls) for one operation under the call mutex, with the timeout
// and the abort state checked; errors become a failed future. `wait_for_stream`: the stream's
// earlier work completes first (outside the window an abort waits for: it may be what hangs).
template <class Enqueue>
Future<void> run(NcclCommunicator::Impl& impl, Stream& stream, std::chrono::milliseconds timeout,
                 std::string op, std::string description, Enqueue&& enqueue,
                 bool wait_for_stream = false) {
  const cudaStream_t s = cuda_stream_of(stream, impl, description);
  std::lock_guard call(impl.call_mutex);
  if (wait_for_stream) {
    cudaSetDevice(impl.device->ordinal());
    if (const cudaError_t rc = cudaStreamSynchronize(s); rc != cudaSuccess)
      return failed(std::make_exception_ptr(CommError(
          impl.rank, op,
          description + ": waiting for the work before it failed: " + cudaGetErrorString(rc))));
    // And for what that work staged for the host (the counts this call may read).
    std::unique_lock lock(impl.mutex);
    impl.await_delivered(lock);
  }
  {
    std::lock_guard lock(impl.mutex);
    if (impl.aborts->aborted())  // since the caller looked
      return failed(impl.aborts->error(impl.rank, op, description, "was not run"));
    if (!impl.failure.empty())
      return failed(std::make_exception_ptr(
          CommError(impl.rank, op, description + " was not run: " + impl.failure)));
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
  } leave{impl};
  try {
    cudaSetDevice(impl.device->ordinal());
    Call c{impl, s, std::move(op), std::move(description), {}, {}};
    enqueue(c);
    return c.finish_call();
  } catch (const CommError&) {
    return failed(std::current_exception());
  }
}

std::size_t bytes_of(std::size_t count, DataType type) { return count * size_of(type); }

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

std::unique_ptr<NcclCommunicator> NcclCommunicator::init(const NcclUniqueId& id, int rank, int size,
                                                         CudaDevice& device) {
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
  check_nccl(ncclCommInitRank(&impl->comm, size, nccl_id, rank), rank, "init",
             "rank " + std::to_string(rank) + ": ncclCommInitRank");
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
  auto nccl = init(id, over.rank(), over.size(), device);
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
  return init(id, rank, size, device);
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
  std::lock_guard call(impl_->call_mutex);
  auto impl = std::make_unique<Impl>();
  impl->device = impl_->device;
  cudaSetDevice(impl_->device->ordinal());
  check_nccl(ncclCommSplit(impl_->comm, color, impl_->rank, &impl->comm, nullptr), impl_->rank,
             "split", "rank " + std::to_string(impl_->rank) + ": ncclCommSplit");
  check_nccl(ncclCommUserRank(impl->comm, &impl->rank), impl_->rank, "split", "ncclCommUserRank");
  check_nccl(ncclCommCount(impl->comm, &impl->size), impl_->rank, "split", "ncclCommCount");
  auto group = std::make_unique<NcclCommunicator>(std::move(impl));
  group->set_timeout(timeout());
  group->abort_with(abort_state());  // a group aborts with the communicator it came from
  return group;
}

Future<void> NcclCommunicator::do_all_reduce(Stream& stream, const void* send, void* recv,
                                             std::size_t count, DataType type, ReduceOp op,
                                             std::string_view what) {
  return run(*impl_, stream, timeout(), "all_reduce", describe("all_reduce", what, count, type),
             [&](Call& c) {
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
  return run(*impl_, stream, timeout(), "all_gather", describe("all_gather", what, count, type),
             [&](Call& c) {
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
  return run(*impl_, stream, timeout(), "all_to_all", describe("all_to_all", what, count, type),
             [&](Call& c) { enqueue_all_to_all_v(c, send, counts, recv, counts, type); });
}

Future<void> NcclCommunicator::do_all_to_all_v(Stream& stream, const void* send,
                                               std::span<const std::size_t> send_counts, void* recv,
                                               std::span<const std::size_t> recv_counts,
                                               DataType type, std::string_view what) {
  const auto ranks = static_cast<std::size_t>(size());
  require(send_counts.size() == ranks && recv_counts.size() == ranks, "all_to_all_v", what,
          "one send count and one receive count per rank");
  return run(*impl_, stream, timeout(), "all_to_all_v",
             describe("all_to_all_v", what, total(send_counts), type),
             [&](Call& c) { enqueue_all_to_all_v(c, send, send_counts, recv, recv_counts, type); });
}

Future<void> NcclCommunicator::do_all_to_all_v_later(Stream& stream,
                                                     std::function<AllToAllVBuffers()> when_started,
                                                     DataType type, std::string_view what) {
  const std::string description = describe("all_to_all_v", what, 0, type);
  const std::string named =
      description.substr(0, description.rfind(" (")) + " (" + std::string(name_of(type)) + ")";
  // The counts must be on the host: the stream's earlier work (the splits) first.
  return run(
      *impl_, stream, timeout(), "all_to_all_v", named,
      [&](Call& c) {
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
      },
      /*wait_for_stream=*/true);
}

Future<void> NcclCommunicator::do_send(Stream& stream, const void* data, std::size_t count,
                                       DataType type, int peer, std::string_view what) {
  require(peer >= 0 && peer < size(), "send", what,
          "peer " + std::to_string(peer) + " is not a rank of this communicator");
  return run(*impl_, stream, timeout(), "send",
             describe("send to rank " + std::to_string(peer), what, count, type), [&](Call& c) {
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
             describe("recv from rank " + std::to_string(peer), what, count, type), [&](Call& c) {
               void* out = c.device_out(data, bytes_of(count, type));
               check_nccl(ncclRecv(out, count, nccl_type(type), peer, c.impl.comm, c.stream),
                          c.impl.rank, c.op, c.description + ": ncclRecv");
             });
}

}  // namespace swp
