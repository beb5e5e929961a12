#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build, run the flagship example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
./build/examples/fused_sparse_dist_plan
