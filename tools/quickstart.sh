#!/usr/bin/env bash
# Quick start, step 1: install the packages the core needs, build only what the flagship example
# needs (libswp and the example: about a minute on 2 cores, docs/building.md) and run it, in a
# build directory of its own (build-quickstart). Step 2, tools/test.sh, installs the rest and
# builds and runs everything in its own directories: a directory configured before MPI,
# LibTorch or doctest were installed would go on without them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh --core
[ -f build-quickstart/build.ninja ] ||
  meson setup build-quickstart -Dcpp_args=-g1 -Dunity=on -Dunity_size=8 -Dtests=false \
    -Dbench=disabled -Dtorch=disabled
ninja -C build-quickstart examples/fused_sparse_dist_plan
./build-quickstart/examples/fused_sparse_dist_plan
