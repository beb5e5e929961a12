#!/usr/bin/env bash
# The GPU paths in one call, split where the machines differ: a GPU machine has CUDA but no
# Boost and no package registry, so the build happens here and travels.
#
#   tools/gpu-check.sh pack   here (Boost, meson): builds build-gpu with the cuda backend
#                             required (release), and puts what runs there into
#                             build-gpu-carry/: the test binary, libswp and the shared libraries
#                             the GPU machine lacks (Boost's)
#   tools/gpu-check.sh run    on the GPU machine, from the repository root: prints the GPU, runs
#                             the cuda and nccl tests (none may skip), the training-step
#                             example's metrics, the loader example and `swp run --backend
#                             cuda` (both engines) on the GPU, NVTX ranges (recorded
#                             through NVTX's injection; nsys where it works), the cuda tests under
#                             compute-sanitizer's memcheck, then the library's other tests (the
#                             CLI's need this machine's build paths); each step time-boxed;
#                             exit status 1 when anything failed
#
#   tools/gpu-check.sh nsys   on the GPU machine: only the Nsight Systems step (see nsys_summary)
#   tools/gpu-check.sh dispatch   on the GPU machine: `swp-bench dispatch` (the per-task
#                             figures against Taskflow, oneTBB and a serial loop) on its CPUs,
#                             quiet and with --co-runner
#   tools/gpu-check.sh service    on the GPU machine: issue 15's service load test on its CPUs
#   tools/gpu-check.sh memcheck   on the GPU machine: the nccl tests under compute-sanitizer's
#                             memcheck, GPU_CHECK_MEMCHECK_RUNS times (5; a race shows in some
#                             runs only), GPU_CHECK_MEMCHECK_TESTS selecting them ('nccl*')
#
# With the device tool: `tools/gpu-check.sh pack` here, then run `bash tools/gpu-check.sh run`
# with carry ["build-gpu-carry"] (it must stay under the tool's 64 MiB: pack prints its size).
# GPU_CHECK_OUT=DIR keeps the recorded NVTX ranges (and an Nsight Systems report) there.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:?usage: tools/gpu-check.sh pack|run|nsys|dispatch|service|memcheck}
dir=build-gpu
carry=build-gpu-carry

# Nsight Systems, where the machine has one, on the CLI's run with --nvtx: the NVTX ranges'
# summary from its report. The lent machines have nsys only inside Nsight Compute, which
# writes the raw .qdstrm and cannot turn it into a report itself; its QdstrmImporter can, given
# libdw (carried by pack, in nsys-lib/). Best effort: not counted in the exit status.
nsys_summary() {
  local nsys importer rep=/tmp/swp-nvtx
  nsys=$(command -v nsys || find /opt /usr/local -name nsys -type f -perm -u+x 2>/dev/null | head -n 1 || true)
  if [ -z "$nsys" ]; then
    echo "gpu-check: no nsys on this machine (not counted)"
    return 0
  fi
  echo "gpu-check: nsys at $nsys (not counted)"
  rm -f "$rep".*
  timeout --kill-after=10 90 "$nsys" profile --trace=nvtx,cuda --sample=none --cpuctxsw=none \
    --force-overwrite true -o "$rep" "$carry/swp" run tests/data/plans/three_stage.json \
    --backend cuda --iters 100 --nvtx >/dev/null 2>&1 || echo "gpu-check: nsys profile failed"
  if [ -f "$rep.qdstrm" ] && [ ! -f "$rep.nsys-rep" ]; then
    importer=$(find "$(dirname "$(dirname "$nsys")")" -name QdstrmImporter -type f 2>/dev/null | head -n 1 || true)
    if [ -n "$importer" ]; then
      echo "gpu-check: $importer -i $rep.qdstrm"
      LD_LIBRARY_PATH="$PWD/$carry/nsys-lib:$LD_LIBRARY_PATH" timeout 150 "$importer" \
        -i "$rep.qdstrm" 2>&1 | tail -n 3 || echo "gpu-check: QdstrmImporter failed"
    fi
  fi
  ls -l "$rep".* 2>/dev/null || true
  if [ -f "$rep.nsys-rep" ]; then
    timeout 90 "$nsys" stats --report nvtx_sum "$rep.nsys-rep" 2>&1 | head -n 24 || true
    if [ -n "${GPU_CHECK_OUT:-}" ]; then cp "$rep.nsys-rep" "$GPU_CHECK_OUT/"; fi
  fi
  return 0
}

case "$mode" in
pack)
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" --buildtype=release -Dcuda=enabled -Dnvtx=enabled -Dbench=enabled \
      -Dmpi=disabled >/dev/null
  fi
  # The GPU machine has no Open MPI: a libswp linked against libmpi would not load there.
  # The benchmarks (oneTBB's pipeline beside swp's engines) for the dispatch mode.
  meson setup --reconfigure "$dir" -Dmpi=disabled -Dbench=enabled >/dev/null
  ninja -C "$dir" >/dev/null
  grep -q 'define SWP_HAVE_CUDA 1' "$dir/include/swp/config.hpp" ||
    { echo "gpu-check: $dir was built without the cuda backend" >&2; exit 1; }
  rm -rf "$carry"
  mkdir -p "$carry/lib"
  cp "$dir/tests/swp-tests" "$dir/examples/gpu_train_step" "$dir/examples/loader_pipeline" \
    "$dir/src/cli/swp" "$dir/tests/libswp-nvtx-recorder.so" "$dir/bench/swp-bench" \
    "$dir/examples/micro_batch_service" "$dir/examples/service_load" \
    "$dir/examples/cpu_steadiness" "$dir/tests/swp-cuda-fault-check" "$carry/"
  # libswp under the name the binaries ask for (its SONAME), as a plain file: links may not
  # travel to the other machine.
  soname=$(objdump -p "$dir/src/libswp.so" | awk '/SONAME/ { print $2 }')
  cp -L "$dir/src/libswp.so" "$carry/lib/$soname"
  # What the binaries link from outside the CUDA prefix and the base system: Boost.
  ldd "$dir/tests/swp-tests" "$dir/examples/gpu_train_step" "$dir/src/libswp.so" "$dir/bench/swp-bench" |
    awk '/=> \// { print $3 }' | grep -E 'libboost_|libxxhash|liburing|libtbb' | sort -u | while read -r lib; do cp -L "$lib" "$carry/lib/"; done
  # What Nsight Compute's QdstrmImporter misses there (see nsys_summary), where this machine has it.
  mkdir -p "$carry/nsys-lib"
  for lib in libdw.so.1 libelf.so.1; do
    path=$(ldconfig -p | awk -v name="$lib" '$1 == name { print $NF; exit }')
    if [ -n "$path" ]; then cp -L "$path" "$carry/nsys-lib/"; fi
  done
  du -sh "$carry" | sed 's/^/gpu-check: carry /'
  ;;
run|nsys|dispatch|service|memcheck)
  # GPU_CHECK_SUITE=0 leaves out the library's other tests (minutes; device time is scarce).
  # Each step prints its command; the last line is "gpu-check: exit N".
  export LD_LIBRARY_PATH="$PWD/$carry/lib:${LD_LIBRARY_PATH:-}"
  export SWP_TEST_DATA_DIR="$PWD/tests/data"  # the tree is elsewhere there than here
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader ||
    { echo "gpu-check: no GPU here (nvidia-smi failed)" >&2; exit 1; }
  # CUDA's libraries may live elsewhere there (NCCL in a Python package, say): look for each
  # one the binaries miss under the usual prefixes and add its folder.
  for lib in $(ldd "$carry/swp-tests" "$carry/gpu_train_step" "$carry/loader_pipeline" \
    "$carry/swp" 2>/dev/null |
    awk '/not found/ { print $1 }' | sort -u); do
    found=$(find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -n 1 || true)
    if [ -n "$found" ]; then
      echo "gpu-check: $lib from $found"
      found_dir=$(dirname "$found")
      export LD_LIBRARY_PATH="$found_dir:$LD_LIBRARY_PATH"
    else
      echo "gpu-check: $lib is missing on this machine" >&2
    fi
  done
  # Each step is time-boxed: a hang costs its box, not the whole lease.
  step() { local box=$1; shift; echo "gpu-check: $*"; timeout --kill-after=10 "$box" "$@"; }
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # API errors are not reported: NCCL's initialization probes kernels its build lacks
  # (cudaErrorNoKernelImageForDevice, handled inside NCCL), and swp checks each CUDA call's
  # result itself.
  memcheck() {  # memcheck TEST_CASES: no invalid access, no leak of device memory
    step 240 "$sanitizer" --tool memcheck --leak-check full --report-api-errors no \
      --error-exitcode 9 "$carry/swp-tests" --test-case="$1" --minimal
  }
  if [ "$mode" = nsys ]; then nsys_summary; exit 0; fi
  if [ "$mode" = memcheck ]; then
    runs=${GPU_CHECK_MEMCHECK_RUNS:-5}
    failed=0
    for run in $(seq "$runs"); do
      echo "gpu-check: memcheck run $run of $runs"
      memcheck "${GPU_CHECK_MEMCHECK_TESTS:-nccl*}" || failed=$((failed + 1))
    done
    echo "gpu-check: memcheck failed in $failed of $runs runs"
    echo "gpu-check: exit $((failed > 0))"
    exit $((failed > 0))
  fi
  if [ "$mode" = service ]; then
    # Issue 15's service load test on this machine's CPUs (docs/service.md), server defaults,
    # GPU_CHECK_SERVICE_RUNS runs (3), then how steady the CPUs are (cpu_steadiness).
    lscpu | grep -E '^(Model name|CPU\(s\))' || true
    for run in $(seq "${GPU_CHECK_SERVICE_RUNS:-3}"); do
      echo "gpu-check: service run $run"
      timeout --kill-after=10 120 "$carry/service_load" --spawn "$carry/micro_batch_service" |
        grep -E '^metric ' || echo "gpu-check: service run $run failed"
    done
    "$carry/cpu_steadiness" --seconds 20 | grep -E '^metric ' || true
    exit 0
  fi
  if [ "$mode" = dispatch ]; then
    # The dispatch benchmark on this machine's CPUs (another CPU than CI's kind).
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)' || true
    for co_runner in "" --co-runner; do
      "$carry/swp-bench" dispatch --rounds 7 $co_runner
    done
    exit 0
  fi
  status=0
  # The cuda tests first, alone: not one may skip on a GPU machine.
  log=$(mktemp)
  step 180 "$carry/swp-tests" --test-case='cuda*,nccl*' 2>&1 | tee "$log" || status=1
  if grep -qE '^\[skip\] (cuda|nccl)' "$log"; then
    echo "gpu-check: cuda tests skipped on a GPU machine" >&2
    status=1
  fi
  # A real device fault (a trapping kernel) fails the run with a TaskError naming the task and
  # iteration within 1 s, in each completion mode; a process each (the context breaks).
  for completion in polling host_function; do
    step 60 "$carry/swp-cuda-fault-check" "$completion" || status=1
  done
  # The training step, pipelined by both engines against the serial loop (metric lines).
  step 120 "$carry/gpu_train_step" --iters 300 || status=1
  # The data loader into an H2D -> compute pipeline on the GPU (pinned batch buffers).
  step 120 "$carry/loader_pipeline" --backend cuda --records 4096 --bytes 16384 --epochs 2 || status=1
  # The CLI on the cuda backend: a plan's synthetic device work as spin kernels on CUDA
  # streams, both engines (metric lines: us_per_iter against the plan's bound, efficiency).
  for engine in dataflow clock; do
    step 60 "$carry/swp" run tests/data/plans/three_stage.json --backend cuda --engine "$engine" \
      --iters 300 || status=1
  done
  # NVTX: each task instance one range, as a profiler sees them. The recorder attaches through
  # NVTX's injection variable, the way Nsight Systems does, and writes the ranges down; every
  # one must have started and ended once (3 tasks x 300 iterations; the training step's
  # pipelined and serial iterations).
  nvtx_check() {  # nvtx_check RECORD EXPECTED_STARTS_OR_0 PATTERN
    awk -v want="$2" -v pattern="$3" '
      $1 == "start" { starts++; open[$2] = 1; if ($4 ~ pattern) named++ }
      $1 == "end" { if ($2 in open) { delete open[$2]; ends++ } else bad++ }
      END {
        left = 0; for (id in open) left++
        printf "gpu-check: nvtx ranges: %d started, %d ended, %d matching %s\n", starts, ends, named, pattern
        exit !(starts > 0 && starts == ends && left == 0 && bad == 0 && named == starts &&
               (want == 0 || starts == want))
      }' "$1"
  }
  record=$(mktemp)
  NVTX_INJECTION64_PATH="$PWD/$carry/libswp-nvtx-recorder.so" SWP_NVTX_RECORD="$record" \
    step 60 "$carry/swp" run tests/data/plans/three_stage.json --backend cuda --iters 300 --nvtx &&
    nvtx_check "$record" 900 '^SWP/(Load|Dist|Fwd)/iter[0-9]+$' || status=1
  NVTX_INJECTION64_PATH="$PWD/$carry/libswp-nvtx-recorder.so" SWP_NVTX_RECORD="$record" \
    step 120 "$carry/gpu_train_step" --iters 100 --nvtx >/dev/null &&
    nvtx_check "$record" 0 '^SWP(_serial)?/(H2D|InputDist|Forward|Backward)/iter[0-9]+$' || status=1
  [ -n "${GPU_CHECK_OUT:-}" ] && cp "$record" "$GPU_CHECK_OUT/nvtx-ranges.txt"
  nsys_summary
  # The cuda tests again under compute-sanitizer's memcheck (GPU_CHECK_SANITIZER=0 leaves it
  # out).
  if [ "${GPU_CHECK_SANITIZER:-1}" != 0 ]; then memcheck 'cuda*,nccl*' || status=1; fi
  # Then the library's other tests, on this machine's many cores (the CLI's and the examples'
  # run binaries at this machine's build paths).
  if [ "${GPU_CHECK_SUITE:-1}" != 0 ]; then
    step 420 "$carry/swp-tests" --test-case-exclude='cuda*,nccl*' \
      --source-file-exclude='*/cli/*,*/examples/*,*test_config*' || status=1
  fi
  echo "gpu-check: exit $status"
  exit "$status"
  ;;
*)
  echo "usage: tools/gpu-check.sh pack|run|nsys|dispatch|service|memcheck" >&2
  exit 2
  ;;
esac
