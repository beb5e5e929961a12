#!/usr/bin/env bash
# The GPU paths in one call, split where the machines differ: a GPU machine has CUDA but no
# Boost and no package registry, so the build happens here and travels.
#
#   tools/gpu-check.sh pack   here (Boost, meson): builds build-gpu with the cuda backend
#                             required (release), and puts what runs there into
#                             build-gpu-carry/: the test binary, libswp and the shared libraries
#                             the GPU machine lacks (Boost's)
#   tools/gpu-check.sh run    on the GPU machine, from the repository root: prints the GPU, runs
#                             the cuda and nccl tests (none may skip) and the engine, device and async
#                             tests (the CLI's need this machine's build paths), then the GPU
#                             training-step example's metrics; exit status 1 when anything
#                             failed
#
# With the device tool: `tools/gpu-check.sh pack` here, then run `bash tools/gpu-check.sh run`
# with carry ["build-gpu-carry"] (it must stay under the tool's 64 MiB: pack prints its size).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:?usage: tools/gpu-check.sh pack|run}
dir=build-gpu
carry=build-gpu-carry

case "$mode" in
pack)
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" --buildtype=release -Dcuda=enabled -Dnvtx=enabled -Dbench=disabled \
      -Dmpi=disabled >/dev/null
  fi
  # The GPU machine has no Open MPI: a libswp linked against libmpi would not load there.
  meson setup --reconfigure "$dir" -Dmpi=disabled >/dev/null
  ninja -C "$dir" >/dev/null
  grep -q 'define SWP_HAVE_CUDA 1' "$dir/include/swp/config.hpp" ||
    { echo "gpu-check: $dir was built without the cuda backend" >&2; exit 1; }
  rm -rf "$carry"
  mkdir -p "$carry/lib"
  cp "$dir/tests/swp-tests" "$dir/examples/gpu_train_step" "$dir/examples/loader_pipeline" "$carry/"
  # libswp under the name the binaries ask for (its SONAME), as a plain file: links may not
  # travel to the other machine.
  soname=$(objdump -p "$dir/src/libswp.so" | awk '/SONAME/ { print $2 }')
  cp -L "$dir/src/libswp.so" "$carry/lib/$soname"
  # What the binaries link from outside the CUDA prefix and the base system: Boost.
  ldd "$dir/tests/swp-tests" "$dir/examples/gpu_train_step" "$dir/src/libswp.so" | awk '/=> \// { print $3 }' |
    grep -E 'libboost_|libxxhash|liburing' | sort -u | while read -r lib; do cp -L "$lib" "$carry/lib/"; done
  du -sh "$carry" | sed 's/^/gpu-check: carry /'
  ;;
run)
  export LD_LIBRARY_PATH="$PWD/$carry/lib:${LD_LIBRARY_PATH:-}"
  export SWP_TEST_DATA_DIR="$PWD/tests/data"  # the tree is elsewhere there than here
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader ||
    { echo "gpu-check: no GPU here (nvidia-smi failed)" >&2; exit 1; }
  status=0
  # The cuda tests first, alone: not one may skip on a GPU machine.
  log=$(mktemp)
  "$carry/swp-tests" --test-case='cuda*,nccl*' 2>&1 | tee "$log" || status=1
  if grep -qE '^\[skip\] (cuda|nccl)' "$log"; then
    echo "gpu-check: cuda tests skipped on a GPU machine" >&2
    status=1
  fi
  # Then the library's other tests, on this machine's many cores (the CLI's and the examples'
  # run binaries at this machine's build paths).
  "$carry/swp-tests" --test-case-exclude='cuda*,nccl*' --source-file-exclude='*/cli/*,*/examples/*,*test_config*' ||
    status=1
  # The training step, pipelined by both engines against the serial loop (metric lines).
  "$carry/gpu_train_step" --iters 300 || status=1
  # The data loader into an H2D -> compute pipeline on the GPU (pinned batch buffers).
  "$carry/loader_pipeline" --backend cuda --records 4096 --bytes 16384 --epochs 2 || status=1
  exit "$status"
  ;;
*)
  echo "usage: tools/gpu-check.sh pack|run" >&2
  exit 2
  ;;
esac
