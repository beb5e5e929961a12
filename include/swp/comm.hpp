#pragma once
// The comm layer: collectives between ranks, stream-ordered (docs/comm.md). The MPI backend:
// include swp/comm/mpi/mpi_communicator.hpp where SWP_HAVE_MPI.

#include "swp/comm/abort_on_failure.hpp"
#include "swp/comm/communicator.hpp"
#include "swp/comm/input_dist.hpp"
