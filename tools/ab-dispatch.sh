#!/usr/bin/env bash
# Compares two builds on `swp-bench dispatch`, alternating them in one loop so that both see the
# same spells of a noisy machine, and prints each metric's median per build.
#
#   tools/ab-dispatch.sh stage DIR             copies build/bench/swp-bench and build/src/libswp.so*
#                                              to DIR/bench and DIR/src (the bench finds its
#                                              library at ../src, so each copy runs its own)
#   tools/ab-dispatch.sh DIR_A DIR_B N [ARGS]  N alternations (A first, then B), each one
#                                              `swp-bench dispatch ARGS` per build
#
# Example: stage the base, rebuild, stage the change, then
#   tools/ab-dispatch.sh /tmp/ab/base /tmp/ab/new 20 --threads 2 --work-us 0,1 --rounds 5
# On the 2-vCPU AMD kind, 10 alternations of two copies of one build differed by 5%: claim a
# difference under 5% only from >= 20 alternations, and with the order swapped (B A) as well.
set -euo pipefail

if [ "${1:-}" = stage ]; then
  [ $# -eq 2 ] || { echo "usage: $0 stage DIR" >&2; exit 2; }
  root="$(cd "$(dirname "$0")/.." && pwd)"
  mkdir -p "$2/bench" "$2/src"
  cp "$root/build/bench/swp-bench" "$2/bench/"
  cp -P "$root"/build/src/libswp.so "$root"/build/src/libswp.so.0 "$root"/build/src/libswp.so.0.*[0-9] "$2/src/"
  echo "staged $(git -C "$root" rev-parse --short HEAD) in $2"
  exit 0
fi

[ $# -ge 3 ] || { echo "usage: $0 DIR_A DIR_B N [dispatch args...] | $0 stage DIR" >&2; exit 2; }
a=$1 b=$2 n=$3
shift 3
for dir in "$a" "$b"; do
  [ -x "$dir/bench/swp-bench" ] || { echo "error: $dir/bench/swp-bench not found (stage it first)" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for _ in $(seq "$n"); do
  "$a/bench/swp-bench" dispatch "$@" 2>/dev/null | grep '^metric' >>"$out/a"
  "$b/bench/swp-bench" dispatch "$@" 2>/dev/null | grep '^metric' >>"$out/b"
done
python3 - "$out/a" "$out/b" "$a" "$b" <<'PY'
import collections, statistics, sys
def medians(path):
    values = collections.defaultdict(list)
    for line in open(path):
        _, name, value, _unit = line.split()
        values[name].append(float(value))
    return {name: statistics.median(v) for name, v in values.items()}
a, b = medians(sys.argv[1]), medians(sys.argv[2])
print(f"{'metric':52s} {'A':>10s} {'B':>10s}   A = {sys.argv[3]}, B = {sys.argv[4]}")
for name in a:
    if name in b and (name.startswith("ns_per_task") or "_over_" in name) and not name.endswith("_min"):
        print(f"{name:52s} {a[name]:10.3f} {b[name]:10.3f}")
PY
