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
started=$SECONDS
stage() { echo "== $1 (at $((SECONDS - started)) s)"; }
# Debug info is line tables only (-g1): file:line in every sanitizer report and backtrace, at
# two thirds of the compile time of full -g (no variable locations; debug a build of your own).
setup() {  # setup DIR TARGET [meson options...]: configures once, builds TARGET ('' = all)
  local dir=$1 target=$2
  shift 2
  [ -f "$dir/build.ninja" ] || meson setup "$dir" -Dcpp_args=-g1 "$@" >/dev/null
  ninja -C "$dir" -j "$jobs" $target
}

# Coroutine frames from operator new (no pooling), so ASan sees a use of a freed frame.
# The sanitizer builds build what the test suite runs (meson-test-prereq: swp-tests, the CLI, the
# examples it runs), not the other examples.
stage "build under AddressSanitizer + UndefinedBehaviorSanitizer"
setup build-asan meson-test-prereq -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Dbench=disabled \
  -Dpooled_frames=disabled
stage "tests under AddressSanitizer + UndefinedBehaviorSanitizer"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  ./build-asan/tests/swp-tests --no-intro --minimal

# -O1: TSan instruments every access at any optimization level (its docs ask for -O1 or
# more); the suite compiles in two thirds of -O2's time (docs/building.md has the figures).
stage "build under ThreadSanitizer"
setup build-tsan meson-test-prereq -Db_sanitize=thread -Doptimization=1 -Ddebug=true -Dbench=disabled
stage "tests under ThreadSanitizer"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(pwd)/tools/tsan.supp" \
  ./build-tsan/tests/swp-tests --no-intro --minimal

stage "fuzzing, ${SWP_FUZZ_SECONDS:-15} s per target"
bash tools/fuzz.sh "${SWP_FUZZ_SECONDS:-15}"

stage "plain build"
setup build ''
stage "multi-rank tests (MPI, 2 and 4 ranks)"
bash tools/mpi-tests.sh build
stage "consumer of the installed library"
bash tools/consumer-build.sh build
stage "tests"
./build/tests/swp-tests
