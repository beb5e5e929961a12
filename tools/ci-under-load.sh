#!/usr/bin/env bash
# Runs .ci/run several times in a row while a CPU hog keeps one core busy, the way a shared CI
# machine would: the suite must stay green (no test may depend on having the cores to itself).
#
#   tools/ci-under-load.sh [RUNS]    RUNS in a row (default 3); HOGS=2 for two hogs
#
# Prints one line per run (exit status, minutes) and fails when any run failed. Each run's
# output is kept in build-load/run-N.log.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
hogs=${HOGS:-1}
mkdir -p build-load
pids=()
for _ in $(seq "$hogs"); do
  yes >/dev/null &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT

failed=0
for run in $(seq "$runs"); do
  start=$(date +%s)
  bash .ci/run >"build-load/run-$run.log" 2>&1
  status=$?
  minutes=$(awk -v s="$(( $(date +%s) - start ))" 'BEGIN { printf "%.1f", s / 60 }')
  echo "run $run of $runs under $hogs CPU hog(s): exit $status, $minutes min"
  tail -3 "build-load/run-$run.log" | sed 's/^/  /'
  [ "$status" -eq 0 ] || failed=1
done
exit "$failed"
