#!/usr/bin/env bash
# Quick start, step 1: install the missing packages, build only what the flagship example needs
# (libswp and the example: about a minute on 2 cores, docs/building.md) and run it. Step 2,
# tools/test.sh, builds and runs everything else; it goes on in this same build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
# Configured as tools/test.sh configures its plain build, so that step 2 reuses what this built.
[ -f build/build.ninja ] || meson setup build -Dcpp_args=-g1 -Dunity=on -Dunity_size=8
ninja -C build examples/fused_sparse_dist_plan
./build/examples/fused_sparse_dist_plan
