#pragma once
// Communicator: collectives between ranks, ordered on a stream — the comm layer's seam, which
// the MPI (CPU) and NCCL (GPU) backends implement.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "swp/async/future.hpp"

namespace swp {

class Stream;

/// The element types collectives carry.
enum class DataType : std::uint8_t { u8, i32, i64, f32, f64 };

/// Bytes per element of `type`.
[[nodiscard]] std::size_t size_of(DataType type) noexcept;
/// "f32", "i64", ...
[[nodiscard]] std::string_view name_of(DataType type) noexcept;

/// The DataType of T; a type collectives do not carry does not compile.
template <class T>
constexpr DataType data_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, std::uint8_t> || std::is_same_v<U, std::byte>) {
    return DataType::u8;
  } else if constexpr (std::is_same_v<U, std::int32_t>) {
    return DataType::i32;
  } else if constexpr (std::is_same_v<U, std::int64_t>) {
    return DataType::i64;
  } else if constexpr (std::is_same_v<U, float>) {
    return DataType::f32;
  } else if constexpr (std::is_same_v<U, double>) {
    return DataType::f64;
  } else {
    static_assert(sizeof(U) == 0, "collectives carry u8/byte, i32, i64, f32 and f64");
  }
}

/// The buffers and counts of an all_to_all_v known only when it starts (see
/// Communicator::all_to_all_v with a callable): `send` holds send_counts[r] elements for each
/// rank r back to back, `recv` has room for recv_counts[r] from each rank r.
struct AllToAllVBuffers {
  const void* send = nullptr;
  std::vector<std::size_t> send_counts;
  void* recv = nullptr;
  std::vector<std::size_t> recv_counts;
};

/// How all_reduce combines the ranks' elements.
enum class ReduceOp : std::uint8_t { sum, prod, min, max };

/// A collective or point-to-point operation failed: names the rank, the operation and what
/// the caller said it was for (a task name), e.g. "rank 1: all_reduce 'Backward' (1024 f32)
/// failed: ...".
class CommError : public std::runtime_error {
 public:
  CommError(int rank, std::string op, const std::string& message)
      : std::runtime_error(message), rank_(rank), op_(std::move(op)) {}
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] const std::string& op() const noexcept { return op_; }

 private:
  int rank_;
  std::string op_;
};

/// An operation did not complete within the communicator's timeout: some rank did not take
/// part (it failed, or issued its collectives in another order — see globally ordered tasks).
class CommTimeout : public CommError {
 public:
  using CommError::CommError;
};

/// The communicator was aborted (Communicator::abort): by a rank that failed — this one or a
/// peer — so the operation failed at once (or was not run) instead of waiting for ranks that
/// will never take part. `rank()` is this rank, `aborting_rank()` the one that called abort()
/// and `reason()` what it said, e.g. "rank 0: all_reduce 'Backward iter 7' (1 i64) failed:
/// rank 1 aborted: task 'Forward' failed in iteration 7: corrupt record ...".
class CommAborted : public CommError {
 public:
  CommAborted(int rank, std::string op, const std::string& message, int aborting_rank,
              std::string reason)
      : CommError(rank, std::move(op), message),
        aborting_rank_(aborting_rank),
        reason_(std::move(reason)) {}
  [[nodiscard]] int aborting_rank() const noexcept { return aborting_rank_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  int aborting_rank_;
  std::string reason_;
};

namespace detail {
class AbortState;
}  // namespace detail

/// A group of ranks exchanging data. Every operation is *stream-ordered*: it is queued on
/// `stream` behind the work queued there before it, and later work on that stream runs after
/// it. The buffers must stay valid (and `send` unchanged) until it completed.
///
/// Completion: the returned future completes once the operation completed on this rank (its
/// `recv` holds the result); `co_await` it from a task, or `get()` it outside one. Ranks must
/// issue the same collectives in the same order on a communicator (MPI's and NCCL's rule);
/// swp's globally ordered tasks make the engines do so from any lane.
/// Errors: the future fails with CommError (the backend's error), or CommTimeout when the
/// operation did not complete within timeout() — never a hang. std::invalid_argument (thrown
/// at once) for buffers whose sizes do not fit the operation or a peer out of range. An
/// operation that fails on this rank as it starts — after taking its place in the call
/// order, before the backend has it (an exception from all_to_all_v's `when_started`, a start
/// the backend refuses) — fails with its own CommError and aborts the communicator with that
/// error as the reason (see abort()): the peers' part of it would otherwise pair with this
/// rank's next operation, another operation's data landing in their buffers unnoticed.
/// Cancellation: an operation that started cannot be withdrawn (the other ranks take part in
/// it); a waiter cancelled through its stop signal stops waiting, the operation goes on.
/// Abort: abort() fails every pending operation of every rank with CommAborted within a
/// second, and every later one at once — how one rank's failure reaches the others instead
/// of leaving them to their timeout (see abort(), and abort_peers_on_failure).
///
/// Example (every rank):
/// ```
/// swp::MpiSession mpi(argc, argv);
/// auto world = swp::MpiCommunicator::world();
/// std::vector<float> grad(n), sum(n);
/// world->all_reduce(stream, std::span<const float>(grad), std::span<float>(sum),
///                   swp::ReduceOp::sum, "Backward").get();
/// ```
class Communicator {
 public:
  Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  virtual ~Communicator();

  /// This process's rank in the group, 0 .. size() − 1.
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  /// "mpi", "nccl".
  [[nodiscard]] virtual std::string_view backend() const noexcept = 0;

  /// How long an operation may take before it fails with CommTimeout (default 60 s).
  void set_timeout(std::chrono::milliseconds timeout) noexcept { timeout_ = timeout; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }

  /// Order check (off by default): before each collective, the ranks exchange what they are
  /// about to run (operation, element type, count, `what`, compared in full however long
  /// `what` is); when they differ — the ranks called their collectives in different
  /// orders — the collective is not run and fails on every rank with CommError naming each
  /// rank's operation, instead of pairing the wrong operations or hanging. Costs one small
  /// all_gather per collective: a debugging aid, and how tests show that globally ordered tasks
  /// keep the ranks in step. Set it on every rank alike, before the operations it is to check.
  void set_order_check(bool on) noexcept { order_check_ = on; }
  [[nodiscard]] bool order_check() const noexcept { return order_check_; }

  /// Tells every rank that this one failed, so that none waits for it: from now on every
  /// operation on this communicator — pending or later, on every rank — fails with
  /// CommAborted naming this rank and `reason` (the first abort wins; a later one, or one
  /// after a peer's abort arrived, changes nothing). Reaches the communicators that abort
  /// together with this one: on MPI the world it was split from and every group split from
  /// that world (the peers' progress threads see the message within milliseconds; the
  /// documented bound is 1 s), on NCCL this rank's communicator (ncclCommAbort, which NCCL's
  /// peers do not hear of: an NCCL communicator bootstrapped over an MPI one aborts with it,
  /// and the MPI message tells the peers). Returns at once: the messages are nonblocking,
  /// and NCCL's abort runs on its watchdog thread. Any thread; never throws.
  /// Example: `swp::abort_peers_on_failure(pipe, comm)` (swp/comm/abort_on_failure.hpp) calls
  /// it with the run's error when a pipeline's run fails; or by hand:
  /// `catch (const std::exception& e) { world->abort(e.what()); throw; }`.
  void abort(std::string reason) noexcept;
  /// Whether this communicator was aborted, by this rank or a peer.
  [[nodiscard]] bool aborted() const noexcept;
  /// "rank 1 aborted: REASON" once aborted (the rank as numbered in the world it was split
  /// from, on MPI), empty before.
  [[nodiscard]] std::string abort_reason() const;

  /// recv[i] = op over the ranks of send[i], for `count` elements, on every rank.
  Future<void> all_reduce(Stream& stream, const void* send, void* recv, std::size_t count,
                          DataType type, ReduceOp op, std::string_view what = {}) {
    if (aborted()) [[unlikely]]
      return refused("all_reduce", describe("all_reduce", what, count, type));
    return do_all_reduce(stream, send, recv, count, type, op, what);
  }
  /// recv = every rank's `count` elements of send, in rank order (size() × count elements).
  Future<void> all_gather(Stream& stream, const void* send, void* recv, std::size_t count,
                          DataType type, std::string_view what = {}) {
    if (aborted()) [[unlikely]]
      return refused("all_gather", describe("all_gather", what, count, type));
    return do_all_gather(stream, send, recv, count, type, what);
  }
  /// Block r of send (`count` elements) goes to rank r; block r of recv comes from rank r.
  Future<void> all_to_all(Stream& stream, const void* send, void* recv, std::size_t count,
                          DataType type, std::string_view what = {}) {
    if (aborted()) [[unlikely]]
      return refused("all_to_all", describe("all_to_all", what, count, type));
    return do_all_to_all(stream, send, recv, count, type, what);
  }
  /// all_to_all with per-rank counts: send holds send_counts[r] elements for each rank r,
  /// back to back; recv receives recv_counts[r] from each rank r, back to back. Counts must
  /// agree between sender and receiver (the receiver's recv_counts[s] = the sender's
  /// send_counts[r]) — the splits an input distribution exchanges first.
  Future<void> all_to_all_v(Stream& stream, const void* send,
                            std::span<const std::size_t> send_counts, void* recv,
                            std::span<const std::size_t> recv_counts, DataType type,
                            std::string_view what = {}) {
    if (aborted()) [[unlikely]]
      return refused("all_to_all_v", describe("all_to_all_v", what, total(send_counts), type));
    return do_all_to_all_v(stream, send, send_counts, recv, recv_counts, type, what);
  }
  /// all_to_all_v whose counts are not known yet when it is called: `when_started` is called
  /// in stream order, when the operation starts — after the stream's earlier work, such as
  /// the exchange of the splits that give the counts, completed, results it received into
  /// host buffers included — and returns the buffers and
  /// counts (it may allocate `recv` then). The operation takes its place in the call order
  /// now, so calling both levels of an input distribution from one globally ordered task keeps
  /// the ranks in step. Errors: an exception from `when_started` (of any type), or counts that
  /// do not have one entry per rank, fail the future with CommError naming the operation, and
  /// abort the communicator with that error as the reason: this rank skipped its part, so
  /// every rank's pending and later operations fail with CommAborted naming this rank and the
  /// operation, instead of the next collective pairing with the peers' part of this one.
  /// Lifetime: `when_started`, and what it captures, is kept until the operation's future
  /// completed — on NCCL until a result staged for a host buffer was copied there, which comes
  /// after its issue — so it may own the buffers it gives (InputDist's batch does; what a
  /// failed operation may still write after that is keep_until_done's).
  Future<void> all_to_all_v(Stream& stream, std::function<AllToAllVBuffers()> when_started,
                            DataType type, std::string_view what = {}) {
    if (aborted()) [[unlikely]]
      return refused("all_to_all_v", describe("all_to_all_v", what, 0, type));
    return do_all_to_all_v_later(stream, std::move(when_started), type, what);
  }
  /// Sends `count` elements to `peer`, which receives them with recv(..., this rank).
  Future<void> send(Stream& stream, const void* data, std::size_t count, DataType type, int peer,
                    std::string_view what = {}) {
    if (aborted()) [[unlikely]]
      return refused("send", describe("send to rank " + std::to_string(peer), what, count, type));
    return do_send(stream, data, count, type, peer, what);
  }
  Future<void> recv(Stream& stream, void* data, std::size_t count, DataType type, int peer,
                    std::string_view what = {}) {
    if (aborted()) [[unlikely]]
      return refused("recv", describe("recv from rank " + std::to_string(peer), what, count, type));
    return do_recv(stream, data, count, type, peer, what);
  }

  /// Keeps `owner` — what holds the buffers of operations called on this communicator so far —
  /// until none of those operations can touch their buffers any more, then lets it go (on this
  /// thread, or a thread of the backend's: a stream's, as one of those operations ends). An
  /// operation whose future failed may still be under way in the backend: on MPI a collective
  /// that timed out, or one an abort gave up (MPI cannot withdraw either), stays under way until
  /// every rank joined it, and `owner` stays until MPI completed it — seen as a later operation
  /// ends, or when the communicator is destroyed (which waits for what timed out once more); what
  /// is still under way then keeps `owner` until the process ends. On NCCL `owner` stays until
  /// the watchdog saw those operations end (a result staged for a host buffer is copied there
  /// after the call returned, and an operation called while the communicator was being aborted
  /// may fail at once while an earlier one still delivers). The default, for backends whose
  /// operations touch no buffer once their futures completed, lets it go at once (the caller
  /// keeps the buffers until the futures completed, as ever). How InputDist frees a failed or
  /// dropped batch's buffers. Any thread; throws only what allocating throws.
  /// Example: `comm.keep_until_done(batch_buffers);  // after calling the batch's collectives`
  virtual void keep_until_done(std::shared_ptr<const void> owner);

  /// A process group: a communicator over `ranks` (ranks of this communicator, in the new
  /// group's rank order). Called by exactly the ranks in the list (collective over them);
  /// the others do not call it. std::invalid_argument for a rank out of range, a rank listed
  /// twice, or a caller not in the list. On MPI the listed ranks first agree that each of
  /// them called it (nonblocking messages, on this thread), then create the group: a listed
  /// rank that does not call it within timeout() fails it with CommTimeout naming that rank,
  /// an abort with CommAborted, and a rank calling it after another gave up with CommError
  /// naming the one that gave up (calling it again on every listed rank retries it). Each rank
  /// decides by its own deadline, so a listed rank arriving just as another's passes can still
  /// leave the others' creation (MPI_Comm_create_group, which cannot be given up on) waiting
  /// for it: call it where every listed rank does, as at start-up, one split at a time per
  /// communicator.
  virtual std::unique_ptr<Communicator> split(std::span<const int> ranks) = 0;

  // Typed forms: counts from the spans, checked.
  template <class T>
  Future<void> all_reduce(Stream& stream, std::span<const T> send, std::span<T> recv, ReduceOp op,
                          std::string_view what = {}) {
    require(recv.size() == send.size(), "all_reduce", what, "recv must be as large as send");
    return all_reduce(stream, send.data(), recv.data(), send.size(), data_type_of<T>(), op, what);
  }
  template <class T>
  Future<void> all_gather(Stream& stream, std::span<const T> send, std::span<T> recv,
                          std::string_view what = {}) {
    require(recv.size() == send.size() * static_cast<std::size_t>(size()), "all_gather", what,
            "recv must hold size() x send.size() elements");
    return all_gather(stream, send.data(), recv.data(), send.size(), data_type_of<T>(), what);
  }
  template <class T>
  Future<void> all_to_all(Stream& stream, std::span<const T> send, std::span<T> recv,
                          std::string_view what = {}) {
    const auto n = static_cast<std::size_t>(size());
    require(send.size() % n == 0 && recv.size() == send.size(), "all_to_all", what,
            "send must split into size() equal blocks and recv be as large");
    return all_to_all(stream, send.data(), recv.data(), send.size() / n, data_type_of<T>(), what);
  }
  template <class T>
  Future<void> all_to_all_v(Stream& stream, std::span<const T> send,
                            std::span<const std::size_t> send_counts, std::span<T> recv,
                            std::span<const std::size_t> recv_counts, std::string_view what = {}) {
    require(total(send_counts) == send.size() && total(recv_counts) == recv.size(), "all_to_all_v",
            what, "the counts must add up to the buffers' sizes");
    return all_to_all_v(stream, send.data(), send_counts, recv.data(), recv_counts,
                        data_type_of<T>(), what);
  }
  template <class T>
  Future<void> send(Stream& stream, std::span<const T> data, int peer, std::string_view what = {}) {
    return send(stream, data.data(), data.size(), data_type_of<T>(), peer, what);
  }
  template <class T>
  Future<void> recv(Stream& stream, std::span<T> data, int peer, std::string_view what = {}) {
    return recv(stream, data.data(), data.size(), data_type_of<T>(), peer, what);
  }

 protected:
  // The backend's operations, behind the public forms (so that a backend overriding them does
  // not hide the typed templates). Same contracts as the public forms.
  virtual Future<void> do_all_reduce(Stream& stream, const void* send, void* recv,
                                     std::size_t count, DataType type, ReduceOp op,
                                     std::string_view what) = 0;
  virtual Future<void> do_all_gather(Stream& stream, const void* send, void* recv,
                                     std::size_t count, DataType type, std::string_view what) = 0;
  virtual Future<void> do_all_to_all(Stream& stream, const void* send, void* recv,
                                     std::size_t count, DataType type, std::string_view what) = 0;
  virtual Future<void> do_all_to_all_v(Stream& stream, const void* send,
                                       std::span<const std::size_t> send_counts, void* recv,
                                       std::span<const std::size_t> recv_counts, DataType type,
                                       std::string_view what) = 0;
  virtual Future<void> do_all_to_all_v_later(Stream& stream,
                                             std::function<AllToAllVBuffers()> when_started,
                                             DataType type, std::string_view what) = 0;
  virtual Future<void> do_send(Stream& stream, const void* data, std::size_t count, DataType type,
                               int peer, std::string_view what) = 0;
  virtual Future<void> do_recv(Stream& stream, void* data, std::size_t count, DataType type,
                               int peer, std::string_view what) = 0;
  // Throws std::invalid_argument "rank R: OP 'WHAT': MESSAGE" unless `ok`.
  void require(bool ok, std::string_view op, std::string_view what, std::string_view message) const;
  // Throws CommError "DESCRIPTION: counts must have one entry per rank" unless both have size().
  void require_counts(const AllToAllVBuffers& buffers, const std::string& description) const;
  // "rank R: OP 'WHAT' (N TYPE)": how errors name an operation.
  [[nodiscard]] std::string describe(std::string_view op, std::string_view what, std::size_t count,
                                     DataType type) const;
  // A future failed with CommAborted "DESCRIPTION was not run: rank R aborted: ...": an
  // operation called once the communicator was aborted. Precondition: aborted().
  [[nodiscard]] Future<void> refused(std::string_view op, const std::string& description) const;
  // What this communicator's aborts are recorded in. A backend whose communicators abort
  // together shares one: it adopts another's in its constructor, before any operation, and
  // registers there what an abort must do (tell the peers, fail what is pending).
  [[nodiscard]] const std::shared_ptr<detail::AbortState>& abort_state() const noexcept {
    return abort_state_;
  }
  void adopt_abort_state(std::shared_ptr<detail::AbortState> state) noexcept {
    abort_state_ = std::move(state);
  }
  static const std::shared_ptr<detail::AbortState>& abort_state_of(const Communicator& c) noexcept {
    return c.abort_state_;
  }
  static std::size_t total(std::span<const std::size_t> counts) noexcept {
    std::size_t sum = 0;
    for (std::size_t c : counts) sum += c;
    return sum;
  }

 private:
  std::chrono::milliseconds timeout_{60'000};
  bool order_check_ = false;
  std::shared_ptr<detail::AbortState> abort_state_;
};

}  // namespace swp
