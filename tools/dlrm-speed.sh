#!/usr/bin/env bash
# The DLRM example's speed on this machine (docs/dlrm.md, Figures): the pipelined presets
# against the plain loop on 2 ranks — medians of interleaved rounds — and the plain PyTorch
# loop beside them.
#   tools/dlrm-speed.sh [ROUNDS] [ITERS] [BUILD_DIR]   (defaults: 5, 300, build)
# Each round runs every preset (base, sparse_dist, fused_sparse_dist, semi_sync,
# prefetch_sparse_dist) on both engines once, on 2 ranks at the default sizes, with
# --check-serial (the pipelined run and the plain loop back to back in one process, so each
# run's speedup compares like with like); the order rotates from round to round. Then, once
# each, dlrm_train on 1 rank and tools/dlrm_reference.py (Debian python3-torch, run by
# /usr/bin/python3; skipped with a note where it is missing) on the same data. Prints, per
# preset and engine, the medians
#   metric dlrm_<preset>_<engine>_iters_per_s / _serial_iters_per_s / _speedup
# (the speedup: the median of the runs' own ratios), then dlrm_best_speedup and
# dlrm_worst_speedup (over preset x engine), dlrm_1rank_iters_per_s and python_iters_per_s.
# Exit 1 when a run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
iters=${2:-300}
dir=${3:-build}
bin="$dir/examples/dlrm/dlrm_train"
[ -x "$bin" ] || { echo "error: dlrm-speed: $bin was not built (LibTorch or MPI not found)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data="$tmp/data"

configs=()
for preset in base sparse_dist fused_sparse_dist semi_sync prefetch_sparse_dist; do
  for engine in dataflow clock; do configs+=("$preset $engine"); done
done

# metric NAME FILE: the value of `metric NAME` in FILE.
metric() { awk -v n="$1" '$1 == "metric" && $2 == n { print $3 }' "$2"; }

# The data first (written by rank 0 of the first run, then reused), outside the rounds.
mpirun --oversubscribe -np 2 "$bin" --preset sparse_dist --iters 2 --data "$data" >/dev/null

for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < ${#configs[@]}; k++)); do
    read -r preset engine <<<"${configs[$(((k + r) % ${#configs[@]}))]}"
    if ! timeout 600 mpirun --oversubscribe -np 2 "$bin" --preset "$preset" --engine "$engine" \
        --iters "$iters" --check-serial --data "$data" >"$tmp/out" 2>"$tmp/err"; then
      echo "error: dlrm-speed: $preset on $engine failed:" >&2
      tail -5 "$tmp/err" >&2
      exit 1
    fi
    echo "$preset $engine $(metric iters_per_s "$tmp/out") $(metric serial_iters_per_s "$tmp/out")" \
      >>"$tmp/runs"
  done
done

python3 - "$tmp/runs" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    preset, engine, piped, serial = line.split()
    runs.setdefault((preset, engine), []).append((float(piped), float(serial)))
speedups = {}
for (preset, engine), v in runs.items():
    name = f"dlrm_{preset}_{engine}"
    speedups[name] = statistics.median(p / s for p, s in v)
    print(f"metric {name}_iters_per_s {statistics.median(p for p, _ in v):.1f} iters/s")
    print(f"metric {name}_serial_iters_per_s {statistics.median(s for _, s in v):.1f} iters/s")
    print(f"metric {name}_speedup {speedups[name]:.3f} ratio")
best = max(speedups, key=speedups.get)
worst = min(speedups, key=speedups.get)
print(f"metric dlrm_best_speedup {speedups[best]:.3f} ratio")
print(f"metric dlrm_worst_speedup {speedups[worst]:.3f} ratio")
print(f"dlrm-speed: best {best[5:]}, worst {worst[5:]}")
PY

mpirun --oversubscribe -np 1 "$bin" --preset sparse_dist --iters "$iters" --data "$data" >"$tmp/out"
echo "metric dlrm_1rank_iters_per_s $(metric iters_per_s "$tmp/out") iters/s"
# Debian's python3-torch is for the system interpreter (not a pyenv or venv python3).
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  /usr/bin/python3 tools/dlrm_reference.py --data "$data/train" --iters "$iters" |
    grep '^metric python_iters_per_s'
else
  echo "dlrm-speed: no python3-torch for /usr/bin/python3 (apt-get install python3-torch): no Python figure"
fi
