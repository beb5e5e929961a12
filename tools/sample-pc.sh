#!/usr/bin/env bash
# Where a program's time goes on a machine without perf or hardware counters (the CI kind,
# the GPU machines): samples its instruction pointer every few microseconds of wall time
# (tools/sample-pc/sampler.cpp, preloaded) and writes them to a file for
# tools/sample-pc/report.py.
#
#   tools/sample-pc.sh OUT [-i US] -- COMMAND [ARGS...]
#       runs COMMAND with a sample every US µs (default 250) and writes the samples to OUT
#   python3 tools/sample-pc/report.py functions OUT [OUT2...]   per function, side by side
#   python3 tools/sample-pc/report.py lines OUT [OUT2...]       per source line
#   python3 tools/sample-pc/report.py annotate 'SYMBOL' OUT     per instruction of SYMBOL
#
# Build with debug information (-Ddebug=true, or -g in cpp_args) for source lines; a release
# build without it still names functions. Compare runs of the same length: samples are time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

usage() { echo "usage: tools/sample-pc.sh OUT [-i US] -- COMMAND [ARGS...]" >&2; exit 2; }
[ $# -ge 3 ] || usage
out=$1
shift
interval=250
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case "$1" in
  -i) interval=${2:?-i needs microseconds}; shift 2 ;;
  *) usage ;;
  esac
done
[ "${1:-}" = -- ] || usage
shift
[ $# -gt 0 ] || usage

lib=$(mktemp -d)/libswp-sample-pc.so
trap 'rm -rf "$(dirname "$lib")"' EXIT
g++ -std=c++20 -O2 -shared -fPIC -o "$lib" "$here/sample-pc/sampler.cpp" -ldl
out_path=$(realpath -m "$out")
status=0
SWP_SAMPLE_US=$interval SWP_SAMPLE_OUT=$out_path LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" \
  "$@" || status=$?
[ -f "$out_path" ] && echo "sample-pc: $(wc -l <"$out_path") samples in $out" >&2
exit "$status"
