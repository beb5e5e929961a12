#!/usr/bin/env bash
# Regenerate docs/img/presets/<name>.svg: one timeline per preset, from a real run of the
# preset's plan with the synthetic recsys costs (`swp preset NAME --recsys-costs`) on the
# clock engine and the simulated device. The sim backend runs on virtual time, so the same
# binary makes the same pictures byte for byte.
#
#   tools/make-preset-timelines.sh [SWP]     SWP: the swp binary (default build/src/cli/swp)
#   ITERS=8 tools/make-preset-timelines.sh   more iterations (default 6: fill, steady, drain)
#
# Every preset runs on the clock engine: TorchRec drives all of them, the eval and staged
# pipelines included, one progress() call per batch, which is what the clock engine does. On
# the simulated device the data-flow engine reaches the same steady state for eval_sparse_dist,
# eval_fused_sparse_dist and staged, but fills later and reorders the submissions, which makes
# the pictures harder to compare with the schedule tables. Presets with phases (semi_sync's
# sync warm-up, pt2's compile step) run their steady-state plan, the one `swp preset NAME`
# prints.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
swp="${1:-$root/build/src/cli/swp}"
[[ "$swp" = /* ]] || swp="$PWD/$swp"
iters="${ITERS:-6}"
out="$root/docs/img/presets"

if [[ ! -x "$swp" ]]; then
  echo "error: no swp binary at '$swp' (build it, or pass its path)" >&2
  exit 2
fi

mkdir -p "$out"
rm -f "$out"/*.svg
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The plan file is named after the preset and run from its directory, so the picture's title
# reads "NAME: clock engine, sim backend, N iterations".
cd "$work"
while read -r name _; do
  "$swp" preset "$name" --recsys-costs > "$name"
  "$swp" run "$name" --engine clock --backend sim --iters "$iters" --svg "$out/$name.svg" > /dev/null
  echo "docs/img/presets/$name.svg"
done < <("$swp" preset --list)
