#pragma once
// One MPI operation's run, as its stream gets to it (libswp-mpi's private header): its turn in
// the call order, the order check when asked for, its start, the tests until it completed, then
// its future.

#include <chrono>
#include <functional>
#include <string>

#include "mpi_impl.hpp"

namespace swp::detail {

// Runs `op` on the calling thread (its stream's): waits for its turn (the call order, whichever
// streams the operations are on), compares `check` with the other ranks' (empty: no order
// check), starts it with `start` (which returns an MPI error code) and tests it until it
// completed, failed, timed out (`timeout` from now) or the communicator was aborted; then
// completes op's promise — unless an abort failed it first (MpiPendingOp::claim), in which case
// what is under way in MPI is given up. An operation that fails after taking its place in the
// call order, before MPI got it (`start` threw or failed), aborts the communicator.
void run_operation(MpiCommunicator::Impl& impl, MpiPendingOp& op, std::chrono::milliseconds timeout,
                   const std::string& check, const std::function<int(MPI_Request*)>& start);

}  // namespace swp::detail
