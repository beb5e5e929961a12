#!/usr/bin/env bash
# Quick start, step 2: build and run the whole test suite: first under AddressSanitizer and
# UndefinedBehaviorSanitizer, then the plain build, whose doctest summary closes the output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh

jobs=$(nproc)
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined \
  -Db_lundef=false -Dbuildtype=debug
ninja -C build-asan -j "$jobs"
echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  ./build-asan/tests/swp-tests --no-intro

[ -f build/build.ninja ] || meson setup build
ninja -C build -j "$jobs"
echo "== tests"
./build/tests/swp-tests
