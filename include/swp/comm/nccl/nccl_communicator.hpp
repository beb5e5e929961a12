#pragma once
// NcclCommunicator: the comm layer's GPU backend on NCCL (where SWP_HAVE_NCCL): ranks are
// GPUs, in one process or many. No NCCL or CUDA header is needed to use it.

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "swp/comm/communicator.hpp"

namespace swp {

class CudaDevice;

/// The 128 bytes that let NCCL ranks find each other (ncclUniqueId): made by one rank,
/// handed to the others (over MPI, a file, or any channel), used once by all.
struct NcclUniqueId {
  std::array<char, 128> bytes{};
  /// A new id (ncclGetUniqueId). Throws CommError when NCCL fails.
  static NcclUniqueId create();
};

/// When an NcclCommunicator's futures complete (NcclCommunicator::set_completion).
enum class NcclCompletion : std::uint8_t {
  /// Once the GPU finished the operation (the watchdog saw an event recorded after it): its
  /// results are there, in host buffers too. The default.
  finished,
  /// An operation whose results stay on the device completes once it is on its stream, with
  /// its device event (Future::event): `co_await f.on(stream)` makes `stream` wait for it on
  /// the GPU and the CPU waits for nothing more — the engines' two-phase protocol, and seed
  /// 004's second step without a CPU round trip. One with results for host memory (the
  /// splits' counts) still completes once they are there: the CPU must read them. An
  /// operation that fails or times out after its future completed aborts the communicator
  /// (the watchdog still watches it): every later operation fails, naming it.
  submitted,
};

/// A Communicator over NCCL: one rank per GPU. Operations are enqueued on the CUDA stream
/// given (a `CudaStream` of the rank's device) when they are called — NCCL's call order is the
/// order the ranks must agree on, which globally ordered tasks keep — so the stream's later
/// GPU work runs after them, without the CPU waiting.
///
/// Completion: the future completes when the operation finished on the GPU: the
/// communicator's own watchdog thread queries an event recorded after it (64 yields, then
/// sleeps doubling from 1 µs to 1 ms; parked while nothing is pending) — or, under
/// NcclCompletion::submitted, once it is on its stream (see there). Buffers may be device
/// memory (what NCCL takes) or host memory (staged through device scratch space on the same
/// stream, in stream order: a convenience for small buffers such as splits, with a copy each
/// way). The staging blocks (device scratch, page-locked bounce buffers) and the completion
/// events come from pools the communicator keeps: an operation allocates and frees no device
/// or pinned memory once they hold what was in flight at once. Errors:
/// CommError with NCCL's error string (ncclCommGetAsyncError is watched too: an asynchronous error
/// fails every pending operation); CommTimeout when an operation did not finish within timeout():
/// the communicator is then aborted (ncclCommAbort, NCCL's only way out of a collective some rank
/// never joined), and every later operation fails at once. std::invalid_argument, at once, for a
/// stream that is not a CUDA stream of this rank's device, and for buffers that do not fit.
/// Abort: abort() aborts this rank's communicator on the watchdog thread (ncclCommAbort: its
/// kernels end), failing every pending operation with CommAborted, and every later one at
/// once. NCCL has no way to tell the peers: a communicator made by bootstrap() aborts together
/// with the one it was bootstrapped over (an MPI abort message reaches the peers, whose NCCL
/// communicators then abort too), split_by_color's groups with their parent, and for_devices'
/// ranks with each other.
/// Order check (set_order_check, see Communicator): before each collective the ranks
/// all-gather what they are about to run (ncclAllGather on the operation's stream) and the
/// calling thread reads it back before enqueuing the collective — a CPU round trip per
/// collective: a debugging aid. A mismatch fails the collective on every rank, unrun, with
/// CommError naming each rank's call; the check's own timeout aborts the communicator like any
/// collective's. Point-to-point send and recv are not checked (as on MPI).
/// `all_to_all_v` with counts known only when it starts (seed 004's tensors, whose counts the
/// splits give) needs them on the host: it takes its place in the call order and returns at
/// once; the communicator's issuer thread (started with the first one, bound to this rank's
/// GPU) issues it on its stream once the stream's earlier work completed and its results
/// reached the host — polling an event recorded when it was called, never holding the
/// communicator's lock while it waits. Work queued on that stream after the call may
/// therefore run before it: what needs its result waits for its future (`co_await
/// f.on(stream)`). An operation called after it, on any stream, waits (without the lock) for
/// it to be issued first, then is issued from its own thread, so its stream's later work
/// stays behind it; past twice the timeout that wait aborts the communicator. The issuer
/// fails the operation with CommTimeout naming the rank, the operation and the stream, and
/// aborts the communicator, when that earlier work did not complete within timeout().
/// Thread safety: calls are serialized per communicator (NCCL communicators are not
/// thread-safe); the communicator must outlive its operations, and their streams the
/// operations.
///
/// Example (each process, rank r of n, one GPU each; bootstrap over MPI):
/// ```
/// swp::MpiSession mpi(argc, argv);
/// auto world = swp::MpiCommunicator::world();
/// swp::Runtime rt(std::make_unique<swp::CudaDevice>(local_rank));
/// auto nccl = swp::NcclCommunicator::bootstrap(*world, rt.stream("comm"),
///                                              static_cast<swp::CudaDevice&>(rt.device()));
/// nccl->all_reduce(rt.stream("comm"), grads, sums, swp::ReduceOp::sum, "Backward");
/// ```
class NcclCommunicator final : public Communicator {
 public:
  /// Rank `rank` of `size` on `device`: collective, returns once all `size` ranks joined with
  /// the same id. Made non-blocking (ncclCommInitRankConfig with blocking = 0) and polled,
  /// so that it can give up: when not every rank joined within `timeout` (one failed, was not
  /// started, or read a stale id), the half-made communicator is aborted and CommTimeout
  /// names this rank and "init". Throws CommError when NCCL fails. Its operations, split
  /// groups and destruction (ncclCommFinalize, then destroy; aborted instead past the
  /// communicator's timeout) settle NCCL's non-blocking calls before anything is queued
  /// behind them.
  static std::unique_ptr<NcclCommunicator> init(
      const NcclUniqueId& id, int rank, int size, CudaDevice& device,
      std::chrono::milliseconds timeout = std::chrono::seconds(60));
  /// The id made by `over`'s rank 0 and shared with its all_gather on `stream` (a host
  /// stream is fine), then init with `over`'s rank and size, within `over.timeout()`.
  /// Collective over `over`. The new
  /// communicator aborts together with `over` (see abort()): an abort of either, on any rank
  /// `over` reaches, aborts both.
  static std::unique_ptr<NcclCommunicator> bootstrap(Communicator& over, Stream& stream,
                                                     CudaDevice& device);
  /// The id through a file: rank 0 writes it to `path` (atomically: a temporary file renamed),
  /// the others wait up to `timeout` for it to appear (CommTimeout naming the file
  /// otherwise); then init within `timeout` — a stale file from an earlier run gives the
  /// others an id rank 0 no longer uses, and their init ends in CommTimeout instead of hanging
  /// (use a fresh path per job). For launchers without MPI; `path` on a file system every rank
  /// sees.
  static std::unique_ptr<NcclCommunicator> from_file(
      const std::filesystem::path& path, int rank, int size, CudaDevice& device,
      std::chrono::milliseconds timeout = std::chrono::seconds(60));
  /// One process, several GPUs (ncclCommInitAll): rank i on devices[i]. Blocking (no
  /// timeout: one process has no rank to wait for).
  static std::vector<std::unique_ptr<NcclCommunicator>> for_devices(
      std::span<CudaDevice* const> devices);

  ~NcclCommunicator() override;

  [[nodiscard]] int rank() const noexcept override;
  [[nodiscard]] int size() const noexcept override;
  [[nodiscard]] std::string_view backend() const noexcept override { return "nccl"; }
  /// The CUDA device this rank runs on.
  [[nodiscard]] CudaDevice& device() const noexcept;

  /// NCCL splits are collective over every rank of the parent, which the interface's split
  /// (called by the listed ranks only) cannot express: throws std::logic_error pointing to
  /// split_by_color, or to bootstrapping a communicator over an MPI process group.
  std::unique_ptr<Communicator> split(std::span<const int> ranks) override;
  /// The ranks that pass the same `color` form a new communicator, ordered by their rank here
  /// (ncclCommSplit). Collective: every rank of this communicator calls it; CommTimeout (the
  /// group aborted) when not all of them did within timeout().
  std::unique_ptr<NcclCommunicator> split_by_color(int color);

  /// When futures complete from now on (see NcclCompletion; finished unless set). Set it
  /// before the operations it is for; split_by_color's groups start with their parent's.
  void set_completion(NcclCompletion completion) noexcept;
  [[nodiscard]] NcclCompletion completion() const noexcept;

  /// Keeps `owner` until the operations whose calls returned so far ended (see
  /// Communicator::keep_until_done): issued ones once the watchdog saw the GPU past them and
  /// delivered their results staged for host buffers — or an abort or timeout gave their blocks
  /// back — and those still queued to be issued (all_to_all_v with counts read when it
  /// starts) once issued and ended, or failed unissued (under NcclCompletion::submitted a
  /// future completes before its operation ended). Let go of on this thread, the watchdog's or
  /// the issuer's; what is kept when the communicator is destroyed goes once its watchdog
  /// finished what was pending.
  void keep_until_done(std::shared_ptr<const void> owner) override;

  struct Impl;  // the NCCL communicator, its watchdog, issuer and pools (the .cpp's)
  explicit NcclCommunicator(std::unique_ptr<Impl> impl);

 protected:
  Future<void> do_all_reduce(Stream& stream, const void* send, void* recv, std::size_t count,
                             DataType type, ReduceOp op, std::string_view what) override;
  Future<void> do_all_gather(Stream& stream, const void* send, void* recv, std::size_t count,
                             DataType type, std::string_view what) override;
  Future<void> do_all_to_all(Stream& stream, const void* send, void* recv, std::size_t count,
                             DataType type, std::string_view what) override;
  Future<void> do_all_to_all_v(Stream& stream, const void* send,
                               std::span<const std::size_t> send_counts, void* recv,
                               std::span<const std::size_t> recv_counts, DataType type,
                               std::string_view what) override;
  Future<void> do_all_to_all_v_later(Stream& stream, std::function<AllToAllVBuffers()> when_started,
                                     DataType type, std::string_view what) override;
  Future<void> do_send(Stream& stream, const void* data, std::size_t count, DataType type, int peer,
                       std::string_view what) override;
  Future<void> do_recv(Stream& stream, void* data, std::size_t count, DataType type, int peer,
                       std::string_view what) override;

 private:
  // Records this communicator's aborts in `state` from now on (before any operation), shared
  // with the communicators it aborts with.
  void abort_with(std::shared_ptr<detail::AbortState> state);

  std::unique_ptr<Impl> impl_;
};

}  // namespace swp
