#!/usr/bin/env bash
# The GPU paths in one call, split where the machines differ: a GPU machine has CUDA but no
# Boost and no package registry, so the build happens here and travels.
#
#   tools/gpu-check.sh pack   here (Boost, meson): builds build-gpu with the cuda backend
#                             required (release), and puts what runs there into
#                             build-gpu-carry/: the test binary, libswp, its backend libraries
#                             (libswp-cuda, libswp-nccl) and the shared libraries
#                             the GPU machine lacks (Boost's)
#   tools/gpu-check.sh run    on the GPU machine, from the repository root, in one call within
#                             a budget (GPU_CHECK_BUDGET seconds, 540 = 9 minutes: a 15-minute
#                             lease minus the machine's start; each step's time box is cut to
#                             what is left, and a step with no time left fails as not run):
#                             the GPU, the cuda and nccl tests (none may skip), the device-fault
#                             check, the training-step example's metrics against their targets,
#                             the runtime's cost per GPU task (swp-gpu-bench) against issue 62's,
#                             the loader example, `swp run --backend cuda` (both engines), NVTX
#                             ranges, the multi-GPU steps where the machine has 2 GPUs or more
#                             (as `multi`), the cuda tests under compute-sanitizer's memcheck,
#                             the library's other tests, and nsys where time is left. Every step
#                             and every figure with a target prints one line: `PASS name ...` or
#                             `FAIL name ...` (figures: value, then the target); figures without
#                             a target print `INFO`. The last lines are the summary and
#                             `gpu-check: exit N` (1 when anything failed)
#   tools/gpu-check.sh multi  on a machine with 2 GPUs or more: one rank per GPU through an id
#                             file (NcclCommunicator::from_file) and over MPI where mpirun and an
#                             MPI build are there: uneven all_to_all_v, the input distribution
#                             with fused splits over two process groups, the order check, a
#                             rank that dies, init with a rank missing (swp-nccl-ranks-check);
#                             says so and exits 0 on fewer GPUs
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

usage="usage: tools/gpu-check.sh pack|run|multi|nsys|dispatch|service|memcheck"
mode=${1:?$usage}
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
  # The GPU machine has no Open MPI: a binary linked against libswp-mpi (libmpi) would not
  # load there.
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
    "$dir/examples/cpu_steadiness" "$dir/tests/swp-cuda-fault-check" "$dir/bench/swp-gpu-bench" \
    "$dir/tests/swp-nccl-ranks-check" "$carry/"
  # libswp and the backend libraries built (the binaries link libswp-cuda, the tests
  # libswp-nccl too) under the names the binaries ask for (their SONAMEs), as plain files:
  # links may not travel to the other machine.
  for library in "$dir"/src/libswp.so "$dir"/src/libswp-*.so; do
    soname=$(objdump -p "$library" | awk '/SONAME/ { print $2 }')
    cp -L "$library" "$carry/lib/$soname"
  done
  # What the binaries link from outside the CUDA prefix and the base system: Boost.
  ldd "$dir/tests/swp-tests" "$dir/examples/gpu_train_step" "$dir/src/libswp.so" "$dir/bench/swp-bench" \
    "$dir/bench/swp-gpu-bench" "$dir/tests/swp-nccl-ranks-check" |
    awk '/=> \// { print $3 }' | grep -E 'libboost_|libxxhash|liburing|libtbb' | sort -u | while read -r lib; do cp -L "$lib" "$carry/lib/"; done
  # What Nsight Compute's QdstrmImporter misses there (see nsys_summary), where this machine has it.
  mkdir -p "$carry/nsys-lib"
  for lib in libdw.so.1 libelf.so.1; do
    path=$(ldconfig -p | awk -v name="$lib" '$1 == name { print $NF; exit }')
    if [ -n "$path" ]; then cp -L "$path" "$carry/nsys-lib/"; fi
  done
  du -sh "$carry" | sed 's/^/gpu-check: carry /'
  ;;
ranks)
  # Internal (multi's steps): tools/gpu-check.sh ranks SCENARIO SIZE [STARTED]: STARTED ranks
  # (SIZE unless given: fewer for "missing") of a SIZE-rank NCCL communicator, one process
  # each, meeting through a fresh id file; exit 1 when any rank failed.
  scenario=${2:?ranks SCENARIO SIZE [STARTED]} size=${3:?ranks SCENARIO SIZE [STARTED]}
  started=${4:-$size}
  id=$(mktemp -u /tmp/swp-nccl-id.XXXXXX)
  pids=()
  for rank in $(seq 0 $((started - 1))); do
    "$carry/swp-nccl-ranks-check" --rank "$rank" --size "$size" --id-file "$id" \
      --scenario "$scenario" --timeout-ms "${GPU_CHECK_RANKS_TIMEOUT_MS:-10000}" &
    pids+=("$!")
  done
  status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  rm -f "$id" "$id.tmp"
  exit "$status"
  ;;
run|multi|nsys|dispatch|service|memcheck)
  # GPU_CHECK_SUITE=0 leaves out the library's other tests (minutes; device time is scarce).
  export LD_LIBRARY_PATH="$PWD/$carry/lib:${LD_LIBRARY_PATH:-}"
  export SWP_TEST_DATA_DIR="$PWD/tests/data"  # the tree is elsewhere there than here
  # The steps of run and multi, each judged, within one budget (what a machine without a GPU
  # reports as skipped uses them too).
  budget=${GPU_CHECK_BUDGET:-540}
  began=$SECONDS
  passed=0 failed=0 skipped=0
  failures=""
  logs=$(mktemp -d)
  verdict() {  # verdict PASS|FAIL|SKIP|INFO NAME [DETAIL]: one line, counted
    echo "$1 $2${3:+ $3}"
    case "$1" in
      PASS) passed=$((passed + 1)) ;;
      FAIL) failed=$((failed + 1)); failures="$failures $2" ;;
      SKIP) skipped=$((skipped + 1)) ;;
    esac
  }
  left() { echo $((budget - (SECONDS - began))); }
  # step NAME BOX COMMAND...: COMMAND within min(BOX, what is left of the budget), its output
  # kept in $logs/NAME (and printed); PASS when it exits 0. Returns COMMAND's status.
  step() {
    local name=$1 box=$2 remaining rc=0 t0=$SECONDS
    shift 2
    remaining=$(($(left) - 10))  # kill-after below, and the lines after it
    if [ "$remaining" -lt 5 ]; then
      verdict FAIL "$name" "(not run: the ${budget} s budget is spent)"
      : >"$logs/$name"
      return 1
    fi
    [ "$box" -le "$remaining" ] || box=$remaining
    echo "gpu-check: $name (box ${box} s, $(left) s of the budget left): $*"
    timeout --kill-after=5 "$box" "$@" >"$logs/$name" 2>&1 || rc=$?
    cat "$logs/$name"
    if [ "$rc" -eq 0 ]; then
      verdict PASS "$name" "($((SECONDS - t0)) s)"
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      verdict FAIL "$name" "(timed out after its ${box} s box)"
    else
      verdict FAIL "$name" "(exit $rc after $((SECONDS - t0)) s)"
    fi
    return "$rc"
  }
  # figure STEP METRIC OP TARGET: the `metric METRIC VALUE unit` line of STEP's output
  # against TARGET (OP: >= or <=); FAIL when it is missing. OP "-": no target, INFO.
  figure() {
    local value
    value=$(awk -v m="$2" '$1 == "metric" && $2 == m { v = $3 } END { print v }' "$logs/$1")
    if [ "$3" = - ]; then
      echo "INFO $2 ${value:-missing}"
    elif [ -z "$value" ]; then
      verdict FAIL "$2" "(missing from $1's output)"
    elif awk -v v="$value" -v op="$3" -v t="$4" 'BEGIN { exit !(op == ">=" ? v >= t : v <= t) }'
    then
      verdict PASS "$2" "$value (target $3 $4)"
    else
      verdict FAIL "$2" "$value (target $3 $4)"
    fi
  }
  summary() {  # the last lines: the counts, the verdict, the exit status (1: a FAIL)
    local status=$((failed > 0)) overall
    if [ "$status" != 0 ]; then
      overall="FAIL:$failures"
    elif [ "$passed" = 0 ]; then
      overall="SKIPPED (nothing was verified)"
    else
      overall=PASS
    fi
    echo "gpu-check: summary: $passed PASS, $failed FAIL, $skipped SKIP in $((SECONDS - began)) s" \
      "of a ${budget} s budget: $overall"
    echo "gpu-check: exit $status"
    exit "$status"
  }
  # run's steps by name: what a machine without a GPU reports as not run.
  run_steps="cuda-tests fault-check-polling fault-check-host_function train-step gpu-overhead
    gpu-priority gpu-split loader swp-run-dataflow swp-run-clock nvtx-swp-run nvtx-train-step
    multi memcheck suite"
  if ! gpu_list=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    2>/dev/null) || [ -z "$gpu_list" ]; then
    why="nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'found no GPU' || echo 'is not installed')"
    case "$mode" in
      run | multi | memcheck | nsys)
        # Not a failure of the library: nothing GPU-side can be judged here. Each step says so.
        echo "gpu-check: no GPU here ($why): the GPU steps are not run"
        steps=$run_steps
        [ "$mode" = run ] || steps=$mode
        for name in $steps; do verdict SKIP "$name" "(not run: no GPU here)"; done
        summary
        ;;
      *) echo "gpu-check: no GPU here ($why): $mode runs on the CPUs alone" ;;
    esac
  else
    echo "$gpu_list"
  fi
  if [ ! -d "$carry" ]; then
    verdict FAIL carry "(no $carry/ here: run tools/gpu-check.sh pack on the build machine and carry it)"
    summary
  fi
  # CUDA's libraries may live elsewhere there (NCCL in a Python package, say): look for each
  # one the binaries miss under the usual prefixes and add its folder.
  for lib in $(ldd "$carry/swp-tests" "$carry/gpu_train_step" "$carry/loader_pipeline" \
    "$carry/swp" "$carry/swp-gpu-bench" "$carry/swp-nccl-ranks-check" 2>/dev/null |
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
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ "$mode" = nsys ]; then nsys_summary; exit 0; fi
  if [ "$mode" = memcheck ]; then
    # API errors are not reported: NCCL's initialization probes kernels its build lacks
    # (cudaErrorNoKernelImageForDevice, handled inside NCCL), and swp checks each CUDA call's
    # result itself.
    runs=${GPU_CHECK_MEMCHECK_RUNS:-5}
    failed=0
    for run in $(seq "$runs"); do
      echo "gpu-check: memcheck run $run of $runs"
      timeout --kill-after=10 240 "$sanitizer" --tool memcheck --leak-check full \
        --report-api-errors no --error-exitcode 9 "$carry/swp-tests" \
        --test-case="${GPU_CHECK_MEMCHECK_TESTS:-nccl*}" --minimal || failed=$((failed + 1))
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

  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
  # The multi-GPU steps (tools/gpu-check.sh multi, and run where 2 GPUs or more are there).
  multi_steps() {
    local ranks=$gpus
    [ "$ranks" -le 8 ] || ranks=8
    step multi-file-all 150 bash tools/gpu-check.sh ranks all "$ranks" || true
    step multi-file-rank-dies 120 bash tools/gpu-check.sh ranks dies "$ranks" || true
    step multi-file-rank-missing 120 bash tools/gpu-check.sh ranks missing "$ranks" $((ranks - 1)) || true
    if command -v mpirun >/dev/null && [ -x "$carry/swp-nccl-mpi-ranks-check" ]; then
      step multi-mpi-all 150 mpirun --oversubscribe --allow-run-as-root -np "$ranks" \
        "$carry/swp-nccl-mpi-ranks-check" --timeout-ms 10000 || true
    else
      verdict SKIP multi-mpi-all "(no mpirun here, or pack built without MPI: the lent machines have no Open MPI)"
    fi
  }
  if [ "$mode" = multi ]; then
    if [ "$gpus" -lt 2 ]; then
      verdict SKIP multi "(needs 2 GPUs or more; this machine has $gpus)"
      summary
    fi
    multi_steps
    summary
  fi

  # The cuda tests first, alone: not one may skip on a GPU machine.
  step cuda-tests 180 "$carry/swp-tests" --test-case='cuda*,nccl*' || true
  if grep -qE '^\[skip\] (cuda|nccl)' "$logs/cuda-tests"; then
    verdict FAIL cuda-tests-none-skipped "(a cuda or nccl test skipped on a GPU machine)"
  else
    verdict PASS cuda-tests-none-skipped
  fi
  # A real device fault (a trapping kernel) fails the run with a TaskError naming the task and
  # iteration within 1 s, in each completion mode; a process each (the context breaks).
  for completion in polling host_function; do
    step "fault-check-$completion" 60 "$carry/swp-cuda-fault-check" "$completion" || true
  done
  # The training step, pipelined by both engines against the serial loop: efficiency = bound /
  # pipelined, target >= 0.95 (docs/gpu.md); host-function completion and the CPU submission
  # are figures without a target (the bodies' own CUDA calls, docs/gpu.md).
  if step train-step 120 "$carry/gpu_train_step" --iters 300; then
    for engine in dataflow clock polling_dataflow graph_dataflow; do
      figure train-step "gpu_${engine}_efficiency" '>=' 0.95
    done
    for info in gpu_host_function_dataflow_efficiency gpu_cpu_submit_us_per_task \
      gpu_graph_cpu_submit_us_per_task gpu_completion_latency_us_polling \
      gpu_completion_latency_us_host_function; do
      figure train-step "$info" -
    done
  fi
  # The runtime's own cost per GPU task (issue 62's targets): in polling mode, both engines,
  # at most 2 us of CPU per task over the raw loop and GPU idle gaps at most 5% over the raw
  # loop's; completion seen at most 10 us (p50) after kernels of 1 us, 100 us and 1 ms.
  # Host-function mode: figures without a target.
  if step gpu-overhead 180 "$carry/swp-gpu-bench" --parts overhead,latency; then
    for engine in dataflow clock; do
      figure gpu-overhead "gpu_overhead_${engine}_polling_added_cpu_us_per_task" '<=' 2
      figure gpu-overhead "gpu_overhead_${engine}_polling_idle_ratio" '<=' 1.05
      figure gpu-overhead "gpu_overhead_${engine}_host_function_added_cpu_us_per_task" -
      figure gpu-overhead "gpu_overhead_${engine}_host_function_idle_ratio" -
    done
    for length in 1us 100us 1ms; do
      figure gpu-overhead "gpu_completion_seen_us_polling_$length" '<=' 10
      figure gpu-overhead "gpu_completion_seen_us_host_function_$length" -
    done
  fi
  # Stream priorities (issue 62): the plan's priority reaches the CUDA stream, and a copy
  # kernel on the high-priority stream ends early in a long low-priority kernel of many block
  # waves (target: before half of it; on a stream of the same priority it ends near its end).
  if step gpu-priority 60 "$carry/swp-gpu-bench" --parts priority; then
    figure gpu-priority gpu_priority_plan_reaches_stream '>=' 1
    figure gpu-priority gpu_priority_copy_end_fraction_high '<=' 0.5
    figure gpu-priority gpu_priority_copy_end_fraction_same -
    figure gpu-priority gpu_priority_memcpy_stream -
  fi
  # Seed 004's split on device buffers through a one-rank NCCL communicator (issue 62): the
  # training step keeps >= 0.98 of its bound with 1, 4 and 16 MB of ids per iteration.
  if step gpu-split 120 "$carry/swp-gpu-bench" --parts split; then
    for mb in 1 4 16; do
      figure gpu-split "gpu_split_${mb}mb_efficiency" '>=' 0.98
      figure gpu-split "gpu_split_${mb}mb_us_per_iter" -
      figure gpu-split "gpu_split_${mb}mb_bound_us_per_iter" -
    done
  fi
  # The data loader into an H2D -> compute pipeline on the GPU (pinned batch buffers).
  step loader 120 "$carry/loader_pipeline" --backend cuda --records 4096 --bytes 16384 \
    --epochs 2 || true
  # The CLI on the cuda backend: a plan's synthetic device work as spin kernels on CUDA
  # streams, both engines, against the plan's bound (target >= 0.95; 0.998 measured).
  for engine in dataflow clock; do
    if step "swp-run-$engine" 60 "$carry/swp" run tests/data/plans/three_stage.json \
      --backend cuda --engine "$engine" --iters 300; then
      figure "swp-run-$engine" efficiency '>=' 0.95
    fi
  done
  # NVTX: each task instance one range, as a profiler sees them. The recorder attaches through
  # NVTX's injection variable, the way Nsight Systems does, and writes the ranges down; every
  # one must have started and ended once (3 tasks x 300 iterations; the training step's
  # pipelined and serial iterations).
  nvtx_check() {  # nvtx_check NAME RECORD EXPECTED_STARTS_OR_0 PATTERN
    local line
    line=$(awk -v want="$3" -v pattern="$4" '
      $1 == "start" { starts++; open[$2] = 1; if ($4 ~ pattern) named++ }
      $1 == "end" { if ($2 in open) { delete open[$2]; ends++ } else bad++ }
      END {
        left = 0; for (id in open) left++
        ok = starts > 0 && starts == ends && left == 0 && bad == 0 && named == starts &&
             (want == 0 || starts == want)
        printf "%s %d started, %d ended, %d matching %s%s\n", ok ? "PASS" : "FAIL", starts,
               ends, named, pattern, want == 0 ? "" : " (target " want ")"
      }' "$2")
    verdict "${line%% *}" "$1" "${line#* }"
  }
  record=$(mktemp)
  if NVTX_INJECTION64_PATH="$PWD/$carry/libswp-nvtx-recorder.so" SWP_NVTX_RECORD="$record" \
    step nvtx-swp-run 60 "$carry/swp" run tests/data/plans/three_stage.json --backend cuda \
    --iters 300 --nvtx; then
    nvtx_check nvtx-swp-run-ranges "$record" 900 '^SWP/(Load|Dist|Fwd)/iter[0-9]+$'
  fi
  if NVTX_INJECTION64_PATH="$PWD/$carry/libswp-nvtx-recorder.so" SWP_NVTX_RECORD="$record" \
    step nvtx-train-step 120 "$carry/gpu_train_step" --iters 100 --nvtx; then
    nvtx_check nvtx-train-step-ranges "$record" 0 \
      '^SWP(_serial)?/(H2D|InputDist|Forward|Backward)/iter[0-9]+$'
  fi
  [ -n "${GPU_CHECK_OUT:-}" ] && cp "$record" "$GPU_CHECK_OUT/nvtx-ranges.txt"
  if [ "$gpus" -ge 2 ]; then
    multi_steps
  else
    verdict SKIP multi "(needs 2 GPUs or more; this machine has $gpus)"
  fi
  # The cuda tests again under compute-sanitizer's memcheck (GPU_CHECK_SANITIZER=0 leaves it
  # out). API errors are not reported: NCCL's initialization probes kernels its build lacks
  # (cudaErrorNoKernelImageForDevice, handled inside NCCL), and swp checks each CUDA call's
  # result itself.
  if [ "${GPU_CHECK_SANITIZER:-1}" != 0 ]; then
    step memcheck 240 "$sanitizer" --tool memcheck --leak-check full --report-api-errors no \
      --error-exitcode 9 "$carry/swp-tests" --test-case='cuda*,nccl*' --minimal || true
  fi
  # Then the library's other tests, on this machine's many cores (the CLI's and the examples'
  # run binaries at this machine's build paths).
  if [ "${GPU_CHECK_SUITE:-1}" != 0 ]; then
    step suite 420 "$carry/swp-tests" --test-case-exclude='cuda*,nccl*' \
      --source-file-exclude='*/cli/*,*/examples/*,*test_config*' || true
  fi
  # Nsight Systems last, and only with its own boxes' worth of time left: not counted (the
  # tool is not the library's).
  if [ "$(left)" -ge 340 ]; then
    nsys_summary
  else
    echo "INFO nsys not run ($(left) s of the budget left, its steps take up to 330 s)"
  fi
  summary
  ;;
*)
  echo "$usage" >&2
  exit 2
  ;;
esac
