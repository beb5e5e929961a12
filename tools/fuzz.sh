#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang under AddressSanitizer + UndefinedBehavior-
# Sanitizer (build-fuzz/) and runs each for a bounded time, starting from the seed corpus in
# fuzz/corpus/. Fails on a crash, a sanitizer report, a leak, a hang (one input running past
# the timeout) or running out of memory; the input that did it is kept in build-fuzz/artifacts/.
#
#   tools/fuzz.sh [SECONDS]        seconds per target (default: $SWP_FUZZ_SECONDS or 60)
#   SWP_FUZZ_TARGETS="cli"         run only these targets (plan-json, cli)
#   SWP_FUZZ_TIMEOUT=25            seconds one input may take before it counts as a hang
#
# Prints one line per target: executions, new corpus units, crashes 0, hangs 0.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-${SWP_FUZZ_SECONDS:-60}}
targets=${SWP_FUZZ_TARGETS:-"plan-json cli"}
timeout=${SWP_FUZZ_TIMEOUT:-25}
dir=build-fuzz
root=$PWD  # absolute paths: the CLI target works in a scratch directory of its own

# -O1, as libFuzzer's documentation builds its targets: it compiles in less time than -O2
# (this stage is mostly its build), and coverage feedback does not need more.
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$dir" -Dfuzz=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Doptimization=1 -Ddebug=true -Ddefault_library=static -Dtests=false \
    -Dexamples=false -Dbench=disabled -Dcuda=disabled -Dcpp_args=-gline-tables-only >/dev/null
fi
# Below whatever else runs (tools/test.sh runs the TSan suite meanwhile); the fuzzers below
# run at the normal priority, so their bounded time buys as many executions as it can.
nice -n 10 ninja -C "$dir" -j "$(nproc)" $(for t in $targets; do echo "fuzz/swp-fuzz-$t"; done)

mkdir -p "$dir/artifacts"
status=0
for target in $targets; do
  corpus_name=${target//-/_}
  work="$root/$dir/corpus/$corpus_name"  # grows run after run; the seeds in fuzz/ stay as they are
  mkdir -p "$work"
  log="$dir/fuzz-$target.log"
  options=(-max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=4096
           -print_final_stats=1 -artifact_prefix="$root/$dir/artifacts/$target-")
  case $target in
    plan-json) options+=(-max_len=4096) ;;
    cli) options+=(-max_len=512 -close_fd_mask=1 -dict="$root/fuzz/cli.dict") ;;
  esac
  rc=0
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    "./$dir/fuzz/swp-fuzz-$target" "${options[@]}" "$work" "$root/fuzz/corpus/$corpus_name" \
    >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  added=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz $target: ${runs:-?} executions in ${seconds} s, ${added:-?} new units, crashes 0, hangs 0"
  else
    echo "fuzz $target: FAILED (exit $rc) after ${runs:-?} executions; the input is in $dir/artifacts/"
    tail -n 60 "$log"
    status=1
  fi
done
exit "$status"
