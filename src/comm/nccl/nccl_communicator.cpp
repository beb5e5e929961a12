// NcclCommunicator's public calls: making one (init, bootstrap, from_file, for_devices, the
// splits) and the operations, each issued in call order (nccl_issue.hpp) and completed by the
// watchdog (nccl_watchdog.cpp).

#include "swp/comm/nccl/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "../order_check.hpp"
#include "nccl_impl.hpp"
#include "nccl_issue.hpp"
#include "nccl_wait.hpp"

namespace swp {

using detail::Call;
using detail::check_cuda;
using detail::check_nccl;
using detail::nccl_op;
using detail::nccl_type;
using detail::state_of;
using detail::SteadyClock;

NcclUniqueId NcclUniqueId::create() {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), -1, "ncclGetUniqueId", "ncclGetUniqueId");
  NcclUniqueId out;
  std::memcpy(out.bytes.data(), &id, sizeof id);
  return out;
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

void NcclCommunicator::keep_until_done(std::shared_ptr<const void> owner) {
  if (!owner) return;
  std::vector<std::shared_ptr<const void>> done;  // let go of after the lock, at once if ended
  std::lock_guard lock(impl_->mutex);
  impl_->kept.push_back({impl_->next_seq, std::move(owner)});
  done = impl_->owners_done();
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
  detail::Turn turn(*impl_, timeout(), what);
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
  return detail::run(*impl_, stream, timeout(), "all_reduce", description,
                     order_check_text(*this, description, true), [&](Call& c) {
                       const void* in = c.device_in(send, bytes_of(count, type));
                       void* out = c.device_out(recv, bytes_of(count, type));
                       check_nccl(ncclAllReduce(in, out, count, nccl_type(type), nccl_op(op),
                                                c.impl.comm, c.stream),
                                  c.impl.rank, c.op, c.description + ": ncclAllReduce");
                     });
}

Future<void> NcclCommunicator::do_all_gather(Stream& stream, const void* send, void* recv,
                                             std::size_t count, DataType type,
                                             std::string_view what) {
  const std::string description = describe("all_gather", what, count, type);
  return detail::run(
      *impl_, stream, timeout(), "all_gather", description,
      order_check_text(*this, description, true), [&](Call& c) {
        const void* in = c.device_in(send, bytes_of(count, type));
        void* out = c.device_out(recv, bytes_of(count * static_cast<std::size_t>(size()), type));
        check_nccl(ncclAllGather(in, out, count, nccl_type(type), c.impl.comm, c.stream),
                   c.impl.rank, c.op, c.description + ": ncclAllGather");
      });
}

Future<void> NcclCommunicator::do_all_to_all(Stream& stream, const void* send, void* recv,
                                             std::size_t count, DataType type,
                                             std::string_view what) {
  const std::vector<std::size_t> counts(static_cast<std::size_t>(size()), count);
  const std::string description = describe("all_to_all", what, count, type);
  return detail::run(*impl_, stream, timeout(), "all_to_all", description,
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
  return detail::run(*impl_, stream, timeout(), "all_to_all_v", description,
                     order_check_text(*this, description, false), [&](Call& c) {
                       enqueue_all_to_all_v(c, send, send_counts, recv, recv_counts, type);
                     });
}

Future<void> NcclCommunicator::do_all_to_all_v_later(Stream& stream,
                                                     std::function<AllToAllVBuffers()> when_started,
                                                     DataType type, std::string_view what) {
  const std::string description = describe("all_to_all_v", what, 0, type);
  const std::string named =
      description.substr(0, description.rfind(" (")) + " (" + std::string(name_of(type)) + ")";
  // The counts must be on the host: issued once the stream's earlier work (the splits) is
  // done and delivered, by the issuer thread (run_later).
  return detail::run_later(
      *impl_, stream, timeout(), "all_to_all_v", named, order_check_text(*this, description, false),
      [this, when_started = std::move(when_started), type, named](Call& c) {
        AllToAllVBuffers b;
        try {
          b = when_started();
        } catch (const CommError&) {
          throw;
        } catch (const std::exception& e) {
          throw CommError(c.impl.rank, c.op, named + " failed as it started: " + e.what());
        } catch (...) {
          throw CommError(c.impl.rank, c.op,
                          named +
                              " failed as it started: it threw an exception not derived "
                              "from std::exception");
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
  return detail::run(*impl_, stream, timeout(), "send",
                     describe("send to rank " + std::to_string(peer), what, count, type), {},
                     [&](Call& c) {
                       const void* in = c.device_in(data, bytes_of(count, type));
                       check_nccl(ncclSend(in, count, nccl_type(type), peer, c.impl.comm, c.stream),
                                  c.impl.rank, c.op, c.description + ": ncclSend");
                     });
}

Future<void> NcclCommunicator::do_recv(Stream& stream, void* data, std::size_t count, DataType type,
                                       int peer, std::string_view what) {
  require(peer >= 0 && peer < size(), "recv", what,
          "peer " + std::to_string(peer) + " is not a rank of this communicator");
  return detail::run(
      *impl_, stream, timeout(), "recv",
      describe("recv from rank " + std::to_string(peer), what, count, type), {}, [&](Call& c) {
        void* out = c.device_out(data, bytes_of(count, type));
        check_nccl(ncclRecv(out, count, nccl_type(type), peer, c.impl.comm, c.stream), c.impl.rank,
                   c.op, c.description + ": ncclRecv");
      });
}

}  // namespace swp
