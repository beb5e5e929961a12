#!/usr/bin/env bash
# The MPI communicator's multi-rank tests: build-dir/tests/swp-mpi-tests under mpirun with 2 and
# 4 ranks, oversubscribed (more ranks than cores is fine: the tests wait, they do not time
# anything), allowed as root (CI runs as root). Fails when a rank fails. Where the build has no
# MPI communicator (SWP_HAVE_MPI 0) it says so and exits 0, except under CI (CI=true), where
# tools/install-deps.sh installed Open MPI: a build without it there is a broken setup, and
# the multi-rank tests must not be skipped silently.
#   tools/mpi-tests.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
binary="$dir/tests/swp-mpi-tests"
if [ ! -x "$binary" ]; then
  echo "mpi-tests: $binary was not built (no MPI found by meson): nothing to run"
  if [ "${CI:-}" = true ]; then
    echo "mpi-tests: CI needs the multi-rank tests (Open MPI comes from tools/install-deps.sh)" >&2
    exit 1
  fi
  exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for ranks in 2 4; do
  echo "-- $ranks ranks"
  # Each rank prints its own doctest summary.
  timeout 600 mpirun --oversubscribe -np "$ranks" "$binary" --no-intro --no-colors
done
