#pragma once
// InputDist: seed 004's input distribution, split out of the forward pass — splits first
// (fused into one collective per process group), tensors second (per module).

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swp/async/future.hpp"
#include "swp/comm/communicator.hpp"

namespace swp {

class Stream;

/// One sharded module's input on this rank for one batch: the ids it sends to each rank of
/// the module's process group (`to_rank[r]` for rank r of the group).
struct ModuleInput {
  std::vector<std::vector<std::int64_t>> to_rank;
};

/// One sharded module's input on this rank for one batch, on the device (seed 004 on device
/// buffers: the ids stay where the H2D copy put them): `ids` holds to_rank[r] ids for each
/// rank r of the module's group, back to back; `recv` receives what the group sends this rank,
/// up to `recv_capacity` ids. Both are device memory on NCCL (any memory the backend's
/// collectives take: host memory on MPI), owned by the caller, valid until the module's
/// tensors completed (per-slot buffers: nothing is allocated per batch). Only the counts
/// travel through the host.
struct DeviceModuleInput {
  const std::int64_t* ids = nullptr;
  std::vector<std::size_t> to_rank;
  std::int64_t* recv = nullptr;
  std::size_t recv_capacity = 0;
};

/// What one module received for one batch into its DeviceModuleInput::recv: `values` (that
/// buffer) holds from_rank[0] ids from rank 0, then rank 1's, ...
struct DeviceModuleOutput {
  std::int64_t* values = nullptr;
  std::vector<std::size_t> from_rank;

  /// How many ids arrived.
  [[nodiscard]] std::size_t size() const noexcept;
  /// Where the ids from `rank` of the module's group start in `values`, and how many.
  [[nodiscard]] std::pair<std::int64_t*, std::size_t> from(int rank) const;
};

/// What one module received for one batch: every rank's ids for this rank, in rank order.
struct ModuleOutput {
  std::vector<std::int64_t> values;    // from rank 0, then rank 1, ...
  std::vector<std::size_t> from_rank;  // how many came from each rank of the group

  /// The ids that came from `rank` of the module's group.
  [[nodiscard]] std::span<const std::int64_t> from(int rank) const;
};

/// The input distribution of a model's sharded modules (TorchRec's `input_dist`), as two
/// levels that a pipeline can wait for apart (seed 004):
/// 1. the *splits*: how many ids each rank sends each other rank, per module — a few int64
///    per module, so the launch dominates: the splits of every module on one process group
///    travel in **one** all_to_all (never one across groups);
/// 2. the *tensors*: each module's ids, in its own all_to_all_v — large, left per module so
///    a module's forward can start once its own data arrived.
///
/// `start` calls both levels' collectives at once (the tensors' counts are read when they
/// start, in stream order after the splits arrived), so the one globally ordered task that
/// calls `start` keeps every rank's collectives in the same order; the waits need no order.
///
/// Completion: `Batch::splits()` (wait #1: on the data-dist lane/stream) complete once the
/// splits of every group arrived; `Batch::tensors(module)` (wait #2: on the default stream)
/// once that module's ids arrived, then `Batch::take(module)` hands them over.
/// Errors: `start` throws std::invalid_argument for inputs that do not match the modules
/// (naming the module); a failed or timed-out collective fails the futures with the
/// communicator's CommError / CommTimeout (naming rank and operation, `what` + the module).
/// Cancellation: none — collectives cannot be withdrawn; the batch's buffers live until its
/// last collective completed, even when the Batch handle is dropped earlier, and those of a
/// failed batch until none of its collectives can touch them any more (each group's
/// Communicator::keep_until_done: on MPI while one that timed out is still under way, on NCCL
/// until the watchdog saw each end), then they are freed.
///
/// Example (every rank; `group` a Communicator, `data_dist` and `main` streams):
/// ```
/// swp::InputDist dist;
/// dist.add_module("ebc", group).add_module("ec", group);  // one group: one splits a2a
/// auto batch = dist.start(data_dist, {{"ebc", ebc_in}, {"ec", ec_in}}, "InputDist iter 3");
/// for (auto& f : batch.splits()) co_await f;   // wait #1
/// co_await batch.tensors("ebc").on(main);       // wait #2
/// swp::ModuleOutput ids = batch.take("ebc");
/// ```
class InputDist {
 public:
  struct Options {
    /// One splits collective per process group (seed 004); false: one per module.
    bool fuse_splits = true;
  };

  InputDist() : InputDist(Options{}) {}
  explicit InputDist(Options options);

  /// Adds a sharded module whose ids go to the ranks of `group` (which must outlive the
  /// InputDist). Modules on the same Communicator object form one process group. Throws
  /// std::invalid_argument for an empty or repeated name.
  InputDist& add_module(std::string name, Communicator& group);

  /// The process groups of the modules added (distinct communicators).
  [[nodiscard]] std::size_t process_groups() const noexcept { return groups_.size(); }
  /// Splits collectives `start` calls per batch: process_groups() when fused, else one per
  /// module.
  [[nodiscard]] std::size_t splits_collectives() const noexcept;

  class Batch;

  /// Calls the batch's collectives on `stream` (the data-dist stream): each group's splits
  /// (fused), then each module's tensors. `inputs` holds every module's input, each with one
  /// list per rank of its group. `what` names the collectives in errors (e.g. the task and
  /// iteration); it must be the same on every rank when the order check is on.
  Batch start(Stream& stream, std::map<std::string, ModuleInput> inputs,
              std::string_view what = "InputDist");
  /// start() with every module's ids on the device (DeviceModuleInput): only the splits
  /// (a few counts) go through the host — where the tensors' counts must be read — and each
  /// module's tensors go from its `ids` into its `recv`. On NCCL with
  /// NcclCompletion::submitted, tensors(module) completes once the exchange is on the
  /// stream, with its device event: `co_await batch.tensors(m).on(main)` makes the main
  /// stream wait on the GPU, never the CPU. A module receiving more than its recv_capacity
  /// fails its tensors with CommError naming the module, both counts and the rank, and
  /// aborts the module's communicator (this rank cannot take part in the exchange; see
  /// Communicator::all_to_all_v with a callable): on every rank the module's and the later
  /// modules' tensors fail with CommAborted naming this rank's error. Throws
  /// std::invalid_argument as the host form does, and for a missing `ids` or `recv` with
  /// ids to send or room to receive.
  Batch start_on_device(Stream& stream, std::map<std::string, DeviceModuleInput> inputs,
                        std::string_view what = "InputDist");

 private:
  struct Module {
    std::string name;
    std::size_t group;     // index into groups_
    std::size_t in_group;  // position among its group's modules
  };
  // start() for either kind of input (ModuleInput, DeviceModuleInput; input_dist.cpp).
  template <class Input>
  Batch start_batch(Stream& stream, std::map<std::string, Input>& inputs, std::string_view what);
  Options options_;
  std::vector<Module> modules_;
  std::vector<Communicator*> groups_;
};

/// One batch's distribution (a shared handle: copies refer to the same batch).
class InputDist::Batch {
 public:
  Batch() = default;

  /// Wait #1, one future per splits collective (per process group when fused, in the order
  /// the groups were added): await them all — `for (auto& f : batch.splits()) co_await f;` —
  /// as TorchRec's wait_sparse_data_dist waits for its fused splits awaitables.
  [[nodiscard]] const std::vector<Future<void>>& splits() const;
  /// Wait #2: `module`'s ids arrived. std::out_of_range for a module the batch lacks.
  [[nodiscard]] Future<void> tensors(std::string_view module) const;
  /// Moves `module`'s received ids out; tensors(module) must have completed (rethrows its
  /// error). std::logic_error when it has not or when taken already.
  ModuleOutput take(std::string_view module);
  /// Where `module`'s ids arrived (a batch of start_on_device): its recv buffer
  /// and the count from each rank. tensors(module) must have completed (rethrows its error;
  /// under NcclCompletion::submitted it completes when the exchange was queued: wait for its
  /// device event before reading the buffer). std::logic_error when it has not, or for a
  /// batch started with host inputs (and take() for one started with device inputs).
  DeviceModuleOutput received(std::string_view module) const;

  struct State;  // buffers and futures (input_dist.cpp)

 private:
  friend class InputDist;
  explicit Batch(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace swp
