#!/usr/bin/env bash
# Quick start, step 2: build and run the whole test suite — under AddressSanitizer +
# UndefinedBehaviorSanitizer (clang++), under ThreadSanitizer (g++, a CPU-only build), a short
# run of the fuzz targets (tools/fuzz.sh, SWP_FUZZ_SECONDS per target, 15 by default), then the
# plain build, the example service under hostile clients (service_hostile, about 13 s), the plain
# build's suite with the MPI communicator's multi-rank tests (tools/mpi-tests.sh) and, where
# LibTorch is found, the DLRM example's 2-rank bit-exactness check (tools/dlrm-check.sh ci); then
# install the plain build into a temporary root and build and run a program against it
# (pkg-config and meson), check g++ and clang++ on co_await temporaries (tools/
# compiler-check.sh), and end with the plain build's doctest summary. Any failure fails
# the script.
#
# Each suite runs in the background while the next stage works (the ASan + UBSan suite during
# the TSan build, the TSan suite during the fuzz and plain builds, the plain suite during the
# MPI tests and the consumer build): a suite keeps about one core busy, and a build at a lower
# priority takes what is left. A suite's output follows once it ended. The builds compile in
# unity chunks (several files per compiler run: about a third less compile time).
# docs/building.md has the stage times.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh

jobs=$(nproc)
started=$SECONDS
stage() { echo "== $1 (at $((SECONDS - started)) s)"; }
# Debug info is line tables only (-g1): file:line in every sanitizer report and backtrace, at
# two thirds of the compile time of full -g (no variable locations; debug a build of your own).
# Unity chunks of eight files: each test file keeps its names in a namespace of its own, so
# any grouping compiles (a build of your own compiles file by file unless you ask for unity).
setup() {  # setup DIR TARGET [meson options...]: configures once, builds TARGET ('' = all)
  local dir=$1 target=$2
  shift 2
  # The compiler: $cxx where the caller sets it, else $CXX, else c++. A directory keeps the one
  # it was configured with (remove it to switch).
  [ -f "$dir/build.ninja" ] || CXX=${cxx:-${CXX:-c++}} \
    meson setup "$dir" -Dcpp_args=-g1 -Dunity=on -Dunity_size=8 "$@" >/dev/null
  # What `meson test` of swp-tests needs (meson-test-prereq: the suite, the CLI, the examples
  # it runs) but the multi-rank MPI tests, which only the plain build runs.
  if [ "$target" = suite ]; then
    target=$(ninja -C "$dir" -t query meson-test-prereq |
      awk '/input:/ { f = 1; next } /outputs:/ { f = 0 } f && !/swp-mpi-tests/ { print $1 }')
  fi
  # Below the suite running meanwhile: its waits and deadlines keep their pace.
  nice -n 10 ninja -C "$dir" -j "$jobs" $target
}

# A suite in the background: start_suite NAME COMMAND... (its output goes to a log), then
# end_suite NAME, which waits for it, prints its output and fails the script if it failed.
declare -A suite_pid suite_log
start_suite() {
  local name=$1
  shift
  suite_log[$name]=$(mktemp)
  "$@" >"${suite_log[$name]}" 2>&1 &
  suite_pid[$name]=$!
}
end_suite() {
  local name=$1 status=0
  wait "${suite_pid[$name]}" || status=$?
  stage "output of the tests $name"
  cat "${suite_log[$name]}"
  rm -f "${suite_log[$name]}"
  unset "suite_pid[$name]" "suite_log[$name]"
  if [ "$status" -ne 0 ]; then
    echo "error: the tests $name failed (exit status $status)" >&2
    exit "$status"
  fi
}
# A failing stage ends the script: no suite outlives it, and no log of one is left behind.
end_all_suites() {
  local name
  for name in "${!suite_pid[@]}"; do kill "${suite_pid[$name]}" 2>/dev/null || true; done
  for name in "${!suite_log[@]}"; do rm -f "${suite_log[$name]}"; done
}
trap end_all_suites EXIT

# AddressSanitizer + UBSan with clang++ (14), ThreadSanitizer and the plain build with g++ (12):
# the whole suite passes on both compilers the docs name, and each sanitizer runs on the one
# that compiles it faster (docs/building.md, "The test suite's stages and their cost": at -O0
# under ASan clang takes 28 s for tests/engine/test_pipeline.cpp, g++ 51 s; at -O1 under TSan
# g++ is the faster, 36 s to 40 s). g++ under ASan still checks the push form's co_await
# temporaries (compiler-check below).
# Coroutine frames from operator new (no pooling), so ASan sees a use of a freed frame.
# The sanitizer builds build what the test suite runs (swp-tests, the CLI, the examples it runs),
# not the other examples.
stage "build under AddressSanitizer + UndefinedBehaviorSanitizer (clang++)"
cxx=clang++ setup build-asan suite -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Dbench=disabled \
  -Dpooled_frames=disabled
stage "tests under AddressSanitizer + UndefinedBehaviorSanitizer start (output below)"
start_suite "under AddressSanitizer + UndefinedBehaviorSanitizer" \
  env UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  ./build-asan/tests/swp-tests --no-intro --minimal

# -O1: TSan instruments every access at any optimization level (its docs ask for -O1 or
# more); the suite compiles in two thirds of -O2's time (docs/building.md has the figures).
# Without the CUDA backend (a CPU-only build, as on a machine without CUDA): the other builds
# compile and link every CUDA source where CUDA is installed, this one the CPU-only paths
# (#if SWP_HAVE_CUDA's other side, and the CLI's refusals of cuda and --nvtx). Its cuda tests
# would only skip without a GPU anyway.
stage "build under ThreadSanitizer (CPU-only: -Dcuda=disabled)"
setup build-tsan suite -Db_sanitize=thread -Doptimization=1 -Ddebug=true -Dbench=disabled \
  -Dcuda=disabled
end_suite "under AddressSanitizer + UndefinedBehaviorSanitizer"
stage "tests under ThreadSanitizer start (output below)"
start_suite "under ThreadSanitizer" \
  env TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(pwd)/tools/tsan.supp" \
  ./build-tsan/tests/swp-tests --no-intro --minimal

stage "fuzzing, ${SWP_FUZZ_SECONDS:-15} s per target"
bash tools/fuzz.sh "${SWP_FUZZ_SECONDS:-15}"

stage "plain build"
setup build ''
end_suite "under ThreadSanitizer"
# The example service under hostile clients (docs/service.md, "Hostile clients"): about 13 s,
# alone on the machine (nothing else runs between the two suites), so that its deadlines and
# its memory bound measure the server, not a neighbour.
stage "the example service under hostile clients"
./build/examples/service_hostile --spawn ./build/examples/micro_batch_service --seconds 12
# The plain build's suite runs while the MPI tests and the consumer build do; its output, which
# ends with doctest's summary, comes last.
stage "tests start (output at the end)"
start_suite "of the plain build" ./build/tests/swp-tests
# The engines' reference path (docs/release.md, "Fast paths and the reference path"): the whole
# suite once more, beside the first, with every shortcut off, so the reference path alone
# passes every test.
stage "tests on the engines' reference path (SWP_FAST_PATHS=none) start (output at the end)"
start_suite "on the reference path" env SWP_FAST_PATHS=none ./build/tests/swp-tests --minimal
stage "multi-rank tests (MPI, 2 and 4 ranks)"
bash tools/mpi-tests.sh build
# Where LibTorch was found: its adapters' tests, and the DLRM example's 2-rank bit-exactness
# against its plain loop (docs/dlrm.md; under 2 minutes). Both say so and pass where it was not.
stage "LibTorch adapters and the DLRM example (2 ranks, bit-exact against the plain loop)"
if [ -x build/tests/swp-torch-tests ]; then ./build/tests/swp-torch-tests --minimal; fi
bash tools/dlrm-check.sh ci build
stage "consumer of the installed library"
bash tools/consumer-build.sh build
# g++ and clang++ under ASan: the push form's temporary submits (docs/building.md, "Compiler
# defects"); about a minute, beside the plain suite.
stage "the compilers the docs name, on co_await temporaries"
nice -n 10 bash tools/compiler-check.sh build
end_suite "on the reference path"
end_suite "of the plain build"
