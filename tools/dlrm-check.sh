#!/usr/bin/env bash
# The DLRM example's checks (examples/dlrm, docs/dlrm.md) under mpirun: the pipelined runs give
# the plain loop's weights bit for bit, and more.
#   tools/dlrm-check.sh [ci|full] [BUILD_DIR]   (default: ci, build)
# ci   (CI, under 2 minutes): 2 ranks, small sizes, 200 iterations; base, sparse_dist,
#      fused_sparse_dist and prefetch_sparse_dist on both engines: max_abs_param_diff_vs_serial
#      must be exactly 0; the dataset's files are named as swp::io::generated_file_name names
#      them (as `swp data gen` does), in both modes.
# full (about 10 minutes on 2 cores): the ci matrix on 1 and 2 ranks at the default sizes;
#      semi_sync's final loss within 2% of the serial run's; 2 ranks against 1 rank with the
#      same global batch (loss curves within 1e-5 relative per step); the held-out loss after
#      1000 iterations at most 0.9x the initial one; a failure injected into a task on rank 1
#      stopping both ranks, each naming rank 1, the task and the iteration; a bad flag.
# Where dlrm_train was not built (no LibTorch or no MPI found) it says so and exits 0, except
# under CI (CI=true), where tools/install-deps.sh installs both.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-ci}
dir=${2:-build}
bin="$dir/examples/dlrm/dlrm_train"
case "$mode" in ci|full) ;; *) echo "error: dlrm-check: mode '$mode' is not ci or full" >&2; exit 2 ;; esac
if [ ! -x "$bin" ]; then
  echo "dlrm-check: $bin was not built (LibTorch or MPI not found by meson): nothing to run"
  if [ "${CI:-}" = true ]; then
    echo "dlrm-check: CI needs the DLRM example (tools/install-deps.sh installs libtorch-dev)" >&2
    exit 1
  fi
  exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# run RANKS ARGS...: dlrm_train under mpirun; its output in $tmp/out, stderr in $tmp/err.
run() {
  local ranks=$1
  shift
  timeout 300 mpirun --oversubscribe -np "$ranks" "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
}
metric() { awk -v n="$1" '$1 == "metric" && $2 == n { print $3 }' "$tmp/out"; }
fail() {
  echo "FAIL: $*"
  sed 's/^/  | /' "$tmp/err" | tail -5
  failures=$((failures + 1))
}

if [ "$mode" = ci ]; then
  sizes=(--rows 5000 --batch 128 --train-samples 16384 --data "$tmp/data")
  rank_counts=(2)
else
  sizes=(--data "$tmp/data")
  rank_counts=(1 2)
fi

for ranks in "${rank_counts[@]}"; do
  for preset in base sparse_dist fused_sparse_dist prefetch_sparse_dist; do
    for engine in dataflow clock; do
      label="$ranks ranks, $preset, $engine"
      rc=0
      run "$ranks" --preset "$preset" --engine "$engine" --iters 200 --check-serial "${sizes[@]}" || rc=$?
      if [ "$rc" -ne 0 ]; then
        fail "$label: exit $rc"
        continue
      fi
      diff=$(metric max_abs_param_diff_vs_serial)
      echo "$label: max_abs_param_diff_vs_serial $diff, iters_per_s $(metric iters_per_s), serial_iters_per_s $(metric serial_iters_per_s)"
      [ "$diff" = 0 ] || fail "$label: weights differ from the serial loop's by $diff"
    done
  done
done

# The dataset's files are named as the library's generator names them
# (swp::io::generated_file_name: numbers as wide as the largest, so that name order, the order
# the loader reads them in, is the order the samples were written in).
"$dir/src/cli/swp" data gen --records 4 --bytes 8 --files 4 --out "$tmp/names" >/dev/null 2>"$tmp/err" ||
  fail "swp data gen: exit $?"
expected=$(cd "$tmp/names" 2>/dev/null && ls -- *.swprec || true)
got=$(cd "$tmp/data/train" 2>/dev/null && ls -- *.swprec || true)
echo "dataset file names: $(echo $got)"
[ "$got" = "$expected" ] || fail "the dataset's files are named $(echo $got), the library names them $(echo $expected)"

if [ "$mode" = full ]; then
  # semi_sync: stale embeddings after its synchronous start; final loss within 2%.
  for engine in dataflow clock; do
    if run 2 --preset semi_sync --engine "$engine" --iters 400 --semi-sync-start 100 --check-serial "${sizes[@]}"; then
      fl=$(metric final_loss) sl=$(metric serial_final_loss)
      echo "2 ranks, semi_sync, $engine: final_loss $fl, serial_final_loss $sl, max_abs_param_diff_vs_serial $(metric max_abs_param_diff_vs_serial)"
      awk -v a="$fl" -v b="$sl" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; exit !(d <= 0.02) }' ||
        fail "semi_sync $engine: final loss $fl is not within 2% of the serial $sl"
    else
      fail "semi_sync $engine: exit $?"
    fi
  done

  # The same global batch on 1 rank (two data shards) and on 2 ranks: the same loss curve.
  run 1 --preset sparse_dist --iters 200 --data-shards 2 --losses "$tmp/one.txt" "${sizes[@]}" || fail "1 rank, 2 shards: exit $?"
  run 2 --preset sparse_dist --iters 200 --data-shards 2 --losses "$tmp/two.txt" "${sizes[@]}" || fail "2 ranks, 2 shards: exit $?"
  worst=$(paste "$tmp/one.txt" "$tmp/two.txt" | awk '{ d = ($2 - $4) / $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g", m }')
  echo "1 rank vs 2 ranks, same global batch: largest relative loss difference $worst"
  awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }' || fail "the loss curves of 1 and 2 ranks differ by $worst"

  # The loss falls: held-out loss after 1000 iterations at most 0.9x the initial one.
  if run 2 --preset fused_sparse_dist --iters 1000 --eval "${sizes[@]}"; then
    ratio=$(metric eval_loss_ratio)
    echo "held-out loss: $(metric eval_loss_initial) -> $(metric eval_loss_final) (ratio $ratio)"
    awk -v r="$ratio" 'BEGIN { exit !(r <= 0.9) }' || fail "held-out loss ratio $ratio is above 0.9"
  else
    fail "1000 iterations: exit $?"
  fi

  # A task failing on rank 1 stops both ranks, each naming rank 1, the task and the iteration.
  start=$(date +%s)
  if run 2 --preset sparse_dist --iters 200 --inject-failure 1:Backward:7 "${sizes[@]}"; then
    fail "an injected failure did not fail the run"
  else
    took=$(($(date +%s) - start))
    named=$(grep -c "rank 1.*'Backward'.*iteration 7\|rank 1: task 'Backward' failed in iteration 7" "$tmp/err" || true)
    echo "injected failure: both ranks stopped in ${took}s; error lines naming rank 1, Backward, iteration 7: $named"
    sed 's/^/  | /' "$tmp/err" | grep error || true
    [ "$named" -ge 2 ] || fail "not every rank named rank 1, task Backward and iteration 7"
  fi

  # A bad flag: one error line, exit 2.
  if run 2 --preset nope; then
    fail "--preset nope was accepted"
  else
    code=$?
    lines=$(grep -c '^error: ' "$tmp/err" || true)
    echo "bad flag: exit $code, $lines error line(s): $(head -1 "$tmp/err")"
    [ "$lines" = 1 ] || fail "a bad flag printed $lines error lines"
  fi
fi

if [ "$failures" -ne 0 ]; then
  echo "dlrm-check: $failures check(s) failed"
  exit 1
fi
echo "dlrm-check: ok ($mode)"
