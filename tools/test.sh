#!/usr/bin/env bash
# Quick start, step 2: build and run the whole test suite — under AddressSanitizer +
# UndefinedBehaviorSanitizer, under ThreadSanitizer, a short run of the fuzz targets
# (tools/fuzz.sh, SWP_FUZZ_SECONDS per target, 15 by default), then the plain build with the
# MPI communicator's multi-rank tests (tools/mpi-tests.sh); then
# install the plain build into a temporary root and build and run a program against it
# (pkg-config and meson), and end with the plain build's doctest summary. Any failure fails
# the script.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh

jobs=$(nproc)
setup() {  # setup DIR [meson options...]
  local dir=$1
  shift
  [ -f "$dir/build.ninja" ] || meson setup "$dir" "$@" >/dev/null
  ninja -C "$dir" -j "$jobs"
}

# Coroutine frames from operator new (no pooling), so ASan sees a use of a freed frame.
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Dbench=disabled \
  -Dpooled_frames=disabled
echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  ./build-asan/tests/swp-tests --no-intro --minimal

setup build-tsan -Db_sanitize=thread -Dbuildtype=debugoptimized -Dbench=disabled
echo "== tests under ThreadSanitizer"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(pwd)/tools/tsan.supp" \
  ./build-tsan/tests/swp-tests --no-intro --minimal

echo "== fuzzing, ${SWP_FUZZ_SECONDS:-15} s per target"
bash tools/fuzz.sh "${SWP_FUZZ_SECONDS:-15}"

setup build
echo "== multi-rank tests (MPI, 2 and 4 ranks)"
bash tools/mpi-tests.sh build
echo "== consumer of the installed library"
bash tools/consumer-build.sh build
echo "== tests"
./build/tests/swp-tests
