#pragma once
// MpiCommunicator: the comm layer's CPU backend on MPI (where SWP_HAVE_MPI): ranks are
// processes, started by mpirun. No MPI header is needed to use it.

#include <memory>
#include <span>
#include <string_view>

#include "swp/comm/communicator.hpp"

namespace swp {

/// MPI for this process, for the lifetime of the object: MPI_Init_thread asking for
/// MPI_THREAD_MULTIPLE (streams on several threads call MPI at once), unless MPI is
/// initialized already; MPI_Finalize at destruction when this object initialized it. Throws
/// CommError when MPI cannot give MPI_THREAD_MULTIPLE. One per process, in main().
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool finalize_ = false;
};

/// A Communicator over MPI processes. Each operation is a callable queued on the stream it is
/// given: in stream order, on the stream's thread (a host stream's worker), it starts the
/// nonblocking MPI operation (MPI_Iallreduce, MPI_Ialltoallv, MPI_Isend, ...) and tests it
/// with a bounded back-off until it completed or the timeout passed, then completes the
/// future. Operations of one communicator start in MPI in the order they were *called*,
/// whichever streams they are on (one waits for the one called before it to start), and from
/// any threads (a call takes its place in the call order and in its stream's queue together,
/// so one stream's queue holds them in call order): the call order is what the ranks must
/// agree on, as with NCCL, where a call enqueues the kernel. So the
/// stream's later work sees the result, other streams go on meanwhile, and a rank that never takes
/// part ends in CommTimeout naming this rank, the operation and what it was for, instead of a hang.
///
/// An operation that timed out is still under way inside MPI (MPI cannot withdraw a
/// collective): the communicator's destructor waits for it once more, up to the timeout, and
/// otherwise leaves the communicator unfreed (MPI_Finalize may then report it).
/// Abort (Communicator::abort): a world and the groups split from it abort together. Each
/// world() duplicates the world once more for abort messages, keeps a receive posted there and
/// polls it from a thread of its own (every 1 ms while an operation is pending, 20 ms
/// otherwise); abort() sends the reason to every other rank (MPI_Isend, 1 KiB), so every
/// rank's pending operations fail with CommAborted within milliseconds — also those still in
/// a stream's queue — and later ones at once. Operations an abort left under way in MPI are
/// not waited for at destruction (the communicator is then not freed; MPI_Finalize still runs).
/// A waiter that an abort resumes (on the aborting thread, or for a peer's abort on the abort
/// channel's thread) may destroy communicators of that world there, its last one included.
/// Errors from MPI (MPI_ERRORS_RETURN on its communicators) fail the future with CommError
/// carrying MPI's error string. An operation that its stream refuses (enqueue throws) had
/// taken its place in the call order: the call throws the stream's exception and aborts the
/// communicator (see Communicator's Errors).
///
/// Example (run with `mpirun -np 4 program`):
/// ```
/// swp::MpiSession mpi(argc, argv);
/// auto world = swp::MpiCommunicator::world();
/// swp::Runtime rt;
/// std::vector<double> mine{double(world->rank())}, all(world->size());
/// auto done = world->all_gather(rt.stream("comm"), std::span<const double>(mine),
///                               std::span<double>(all));
/// rt.stream("comm").synchronize();
/// done.get();  // all = {0, 1, 2, 3}
/// ```
class MpiCommunicator final : public Communicator {
 public:
  /// Every process mpirun started (a duplicate of MPI_COMM_WORLD: swp's traffic never meets
  /// the program's own). Collective: every rank calls it. Needs an MpiSession.
  static std::unique_ptr<MpiCommunicator> world();
  ~MpiCommunicator() override;

  [[nodiscard]] int rank() const noexcept override;
  [[nodiscard]] int size() const noexcept override;
  [[nodiscard]] std::string_view backend() const noexcept override { return "mpi"; }

  /// See Communicator::split: an agreement by nonblocking messages (a tag of its own on this
  /// communicator), tested until timeout(), then MPI_Comm_create_group.
  std::unique_ptr<Communicator> split(std::span<const int> ranks) override;
  /// Keeps `owner` until the operations called so far ended in MPI (see
  /// Communicator::keep_until_done): looked at as each later operation ends, and when the
  /// communicator is destroyed (what is still under way in MPI then keeps it until the
  /// process ends).
  void keep_until_done(std::shared_ptr<const void> owner) override;

  struct Impl;  // the MPI communicator and what timed out (the .cpp's)
  explicit MpiCommunicator(std::unique_ptr<Impl> impl);

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
  std::unique_ptr<Impl> impl_;
};

}  // namespace swp
