#pragma once
// MPI's C API for the MPI backend's sources, and an MPI error code as text.

// The C API only: Open MPI's C++ bindings do not compile cleanly at warning_level=3.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstddef>
#include <string>

namespace swp::detail {

// MPI_Error_string of `code` ("MPI error N" where MPI cannot say).
inline std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace swp::detail
