#pragma once
// Tensor forms of the Communicator's collectives: a LibTorch tensor's storage handed to the
// call as it is (no staging copy), its dtype mapped to the collective's DataType, its sizes
// and layout checked before anything is queued. Needs LibTorch (the `torch` build option);
// nothing else of swp includes torch.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "swp/async/future.hpp"
#include "swp/comm/communicator.hpp"

namespace swp {

/// The DataType a collective carries for tensors of `type`: u8 (Byte), i32 (Int), i64 (Long),
/// f32 (Float), f64 (Double). Throws std::invalid_argument naming the dtype for any other
/// (half, bool, complex, ...: the backends have no reduction for them here).
inline DataType data_type_of(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Byte: return DataType::u8;
    case c10::ScalarType::Int: return DataType::i32;
    case c10::ScalarType::Long: return DataType::i64;
    case c10::ScalarType::Float: return DataType::f32;
    case c10::ScalarType::Double: return DataType::f64;
    default:
      throw std::invalid_argument(std::string("collectives carry uint8, int32, int64, float32 and "
                                              "float64 tensors, not ") +
                                  c10::toString(type));
  }
}

namespace detail {

// Throws std::invalid_argument "OP 'WHAT': the ROLE tensor ..." unless `t` can be handed to a
// collective as it is: defined, contiguous (the collective reads and writes its elements in
// order from data_ptr()), on the CPU where the communicator's backend is MPI, of a carried
// dtype. Returns its DataType.
inline DataType collective_buffer(const Communicator& comm, const at::Tensor& t, const char* op,
                                  std::string_view what, const char* role) {
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(op) + " '" + std::string(what) + "': the " + role +
                                " tensor " + why);
  };
  if (!t.defined()) fail("is undefined");
  if (!t.is_contiguous()) fail("is not contiguous (call .contiguous() first)");
  if (comm.backend() == "mpi" && !t.device().is_cpu())
    fail("is on " + t.device().str() + ", but the MPI communicator reads host memory");
  return data_type_of(t.scalar_type());
}

inline std::size_t numel_of(const at::Tensor& t) { return static_cast<std::size_t>(t.numel()); }

// Throws std::invalid_argument unless send's and recv's elements are disjoint in memory: MPI
// forbids aliasing buffers (outside MPI_IN_PLACE), and a partial overlap (two views of one
// storage) would read elements the collective already wrote.
inline void require_disjoint(const at::Tensor& send, const at::Tensor& recv, const char* op,
                             std::string_view what) {
  if (send.numel() == 0 || recv.numel() == 0) return;
  const auto* s = static_cast<const std::byte*>(send.data_ptr());
  const auto* r = static_cast<const std::byte*>(recv.data_ptr());
  const std::size_t s_bytes = numel_of(send) * send.element_size();
  const std::size_t r_bytes = numel_of(recv) * recv.element_size();
  // std::less gives a total order over unrelated pointers.
  const std::less<const std::byte*> before;
  if (before(s, r + r_bytes) && before(r, s + s_bytes))
    throw std::invalid_argument(std::string(op) + " '" + std::string(what) +
                                "': send and recv overlap in the same storage (not in place: "
                                "give recv a tensor of its own)");
}

inline void require_same_type(DataType a, DataType b, const char* op, std::string_view what) {
  if (a != b)
    throw std::invalid_argument(std::string(op) + " '" + std::string(what) +
                                "': send and recv tensors differ in dtype (" +
                                std::string(name_of(a)) + " and " + std::string(name_of(b)) + ")");
}

}  // namespace detail

/// `comm.all_reduce` over tensors: recv = op over the ranks of send, elementwise. `send` and
/// `recv` have the same dtype and number of elements (shapes may differ) and share no element
/// (MPI forbids aliasing buffers outside MPI_IN_PLACE; two overlapping views of one storage are
/// refused too).
///
/// The call hands the tensors' storage to the communicator (data_ptr(), no copy), so — as for
/// every collective — both must stay alive and `send` unchanged until the future completed:
/// keep a reference (e.g. capture the tensors in the work that follows on the stream).
/// Completion, errors and cancellation are Communicator::all_reduce's; before anything is
/// queued, std::invalid_argument for an undefined, non-contiguous or (on MPI) non-CPU tensor,
/// an unsupported dtype, mismatched dtypes or sizes, or overlapping send and recv, naming the
/// operation and `what`.
///
/// Example (every rank):
/// ```
/// at::Tensor grad = ..., sum = at::empty_like(grad);
/// auto done = swp::all_reduce(*world, stream, grad, sum, swp::ReduceOp::sum, "dense grads");
/// ```
inline Future<void> all_reduce(Communicator& comm, Stream& stream, const at::Tensor& send,
                               const at::Tensor& recv, ReduceOp op, std::string_view what = {}) {
  const DataType type = detail::collective_buffer(comm, send, "all_reduce", what, "send");
  detail::require_same_type(type, detail::collective_buffer(comm, recv, "all_reduce", what, "recv"),
                            "all_reduce", what);
  if (detail::numel_of(send) != detail::numel_of(recv))
    throw std::invalid_argument("all_reduce '" + std::string(what) +
                                "': recv must have as many elements as send");
  detail::require_disjoint(send, recv, "all_reduce", what);
  return comm.all_reduce(stream, send.data_ptr(), recv.data_ptr(), detail::numel_of(send), type, op,
                         what);
}

/// `comm.all_gather` over tensors: recv holds every rank's `send`, in rank order
/// (size() × send.numel() elements; e.g. shape {size(), n} for a send of n). Same contract as
/// all_reduce above. A fixed-order sum over the gathered rows (`recv.view({size, n})`, added
/// row by row) is a reduction whose result does not depend on how the backend combines.
inline Future<void> all_gather(Communicator& comm, Stream& stream, const at::Tensor& send,
                               const at::Tensor& recv, std::string_view what = {}) {
  const DataType type = detail::collective_buffer(comm, send, "all_gather", what, "send");
  detail::require_same_type(type, detail::collective_buffer(comm, recv, "all_gather", what, "recv"),
                            "all_gather", what);
  if (detail::numel_of(recv) != detail::numel_of(send) * static_cast<std::size_t>(comm.size()))
    throw std::invalid_argument("all_gather '" + std::string(what) +
                                "': recv must hold size() x send.numel() elements");
  detail::require_disjoint(send, recv, "all_gather", what);
  return comm.all_gather(stream, send.data_ptr(), recv.data_ptr(), detail::numel_of(send), type,
                         what);
}

/// `comm.all_to_all_v` over tensors: send holds send_counts[r] elements for each rank r, back
/// to back in rank order; recv receives recv_counts[r] elements from each rank r. Counts are
/// in elements and must add up to each tensor's numel(); the receiver's recv_counts[s] must be
/// the sender's send_counts[r] (Communicator::all_to_all_v). Same contract as all_reduce above.
inline Future<void> all_to_all_v(Communicator& comm, Stream& stream, const at::Tensor& send,
                                 std::span<const std::size_t> send_counts, const at::Tensor& recv,
                                 std::span<const std::size_t> recv_counts,
                                 std::string_view what = {}) {
  const DataType type = detail::collective_buffer(comm, send, "all_to_all_v", what, "send");
  detail::require_same_type(
      type, detail::collective_buffer(comm, recv, "all_to_all_v", what, "recv"), "all_to_all_v",
      what);
  std::size_t sent = 0, received = 0;
  for (std::size_t c : send_counts) sent += c;
  for (std::size_t c : recv_counts) received += c;
  if (sent != detail::numel_of(send) || received != detail::numel_of(recv))
    throw std::invalid_argument("all_to_all_v '" + std::string(what) +
                                "': the counts must add up to the tensors' numel()");
  detail::require_disjoint(send, recv, "all_to_all_v", what);
  return comm.all_to_all_v(stream, send.data_ptr(), send_counts, recv.data_ptr(), recv_counts,
                           type, what);
}

}  // namespace swp
