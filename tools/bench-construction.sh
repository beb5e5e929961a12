#!/usr/bin/env bash
# Construction benchmark: how long `swp` takes on large plans, where the time goes into
# building the graph, validating it, ordering it and constructing the engine, not into running
# (three iterations of tasks costing 1 µs of device time each).
#
#   tools/bench-construction.sh [SWP]      SWP: the swp binary (default build/src/cli/swp)
#   SIZES="1000 10000" tools/bench-construction.sh     plan sizes (default 1000 10000 100000)
#   SHAPES="chain" tools/bench-construction.sh         shapes (default independent chain dag selfloops wide)
#   COMMANDS="validate run-dataflow-sim" ...            commands (default all below)
#   TIMEOUT=60 tools/bench-construction.sh             seconds per command before giving up
#   KEEP=DIR tools/bench-construction.sh               keep the generated plans in DIR
#
# Shapes, each with task names in an order unrelated to the declaration order (so ties broken
# by name are exercised), stages 0..3, 8 streams, 8 lanes, 1% globally ordered tasks:
#   independent  no dependencies
#   chain        task k depends on task k-1 within the iteration (stages non-decreasing)
#   dag          about 3 intra deps per task on earlier tasks at a stage <= its own, and one
#                inter dep per 4 tasks within corollary 3
#   selfloops    every task depends on itself: an invalid plan with one cycle per task, for
#                `validate` only (exit 1 expected), which must report them in linear time
#   wide         no dependencies, stage 0, 1 µs of CPU time per task too, none globally
#                ordered, every task on a stream and a lane of its own (as many streams as
#                tasks): the runs' look at an iteration's device work must stay linear in the
#                streams that recorded. On host each stream that gets work has a thread of its
#                own, so a host runtime has at most 1024 streams (RuntimeOptions::
#                max_host_streams), one kept for "default": the host runs are measured up to
#                1023 tasks, and from 1024 on the
#                script checks that `swp run` refuses the plan before starting any (exit 1,
#                naming the limit) and prints no metric for it
# Commands: validate, order (ready-first), order-sd (stage-descending), schedule (--periods 4),
# analyze, and run-<engine>-<backend> (`swp run --iters 3`) for dataflow/clock on sim/host.
#
# Prints per measurement `metric construct_<shape>_<size>_<command>_s <seconds> s`, the wall
# time of the whole command (sizes as 1k/10k/100k), and `..._cpu_s`, the CPU time it used
# (user + system, all its threads: the figure to compare on a loaded machine), or `... timeout s`
# past TIMEOUT; then `metric construct_10k_s <max> s`, the slowest wall time on a 10k plan of
# any shape (when 10000 is among the sizes).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
swp="${1:-$root/build/src/cli/swp}"
[[ "$swp" = /* ]] || swp="$PWD/$swp"
if [[ ! -x "$swp" ]]; then
  echo "error: no swp binary at '$swp' (build it, or pass its path)" >&2
  exit 2
fi

work="${KEEP:-}"
if [[ -z "$work" ]]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

SWP="$swp" WORK="$work" SIZES="${SIZES:-1000 10000 100000}" \
  SHAPES="${SHAPES:-independent chain dag selfloops wide}" TIMEOUT="${TIMEOUT:-120}" \
  COMMANDS="${COMMANDS:-validate order order-sd schedule analyze run-dataflow-sim run-dataflow-host run-clock-sim run-clock-host}" \
  python3 - <<'PY'
import json, os, random, resource, subprocess, sys, time

swp, work = os.environ["SWP"], os.environ["WORK"]
sizes = [int(s) for s in os.environ["SIZES"].split()]
shapes = os.environ["SHAPES"].split()
commands = os.environ["COMMANDS"].split()
timeout = float(os.environ["TIMEOUT"])
max_host_streams = 1024  # swp::default_max_host_streams: a host runtime's streams at most

def make_plan(shape, n, seed=1):
    rng = random.Random(seed)
    # Names in a shuffled order: name order and declaration order disagree.
    ids = list(range(n))
    rng.shuffle(ids)
    names = ["t%07d" % i for i in ids]
    if shape == "chain":
        stages = [k * 4 // n for k in range(n)]
    elif shape == "wide":
        stages = [0] * n
    else:
        stages = [rng.randrange(4) for _ in range(n)]
    wide = shape == "wide"
    tasks = [{"name": names[k], "stage": stages[k],
              "stream": "s%d" % (k if wide else rng.randrange(8)),
              "thread_group": "l%d" % (k if wide else rng.randrange(8)),
              "globally_ordered": rng.random() < 0.01, "device_us": 1}
             for k in range(n)]
    if wide:  # every task's work at once: no global order spreads the completions out
        for t in tasks:
            t["cpu_us"] = 1
            t["globally_ordered"] = False
    intra, inter = [], []
    if shape == "chain":
        intra = [[names[k], names[k - 1]] for k in range(1, n)]
    elif shape == "dag":
        for k in range(1, n):
            for _ in range(3):
                d = rng.randrange(k)
                if stages[d] <= stages[k]:
                    intra.append([names[k], names[d]])
        for _ in range(n // 4):
            t, d = rng.randrange(n), rng.randrange(n)
            if stages[d] - stages[t] <= 1:
                inter.append([names[t], names[d]])
    elif shape == "selfloops":
        intra = [[names[k], names[k]] for k in range(n)]
    elif shape not in ("independent", "wide"):
        sys.exit("error: unknown shape '%s' (independent, chain, dag, selfloops, wide)" % shape)
    return {"tasks": tasks, "intra_iter_deps": intra, "inter_iter_deps": inter}

def argv(command, path):
    if command == "validate": return ["validate", path]
    if command == "order": return ["order", path]
    if command == "order-sd": return ["order", path, "--policy", "stage-descending"]
    if command == "schedule": return ["schedule", path, "--periods", "4"]
    if command == "analyze": return ["analyze", path]
    if command.startswith("run-"):
        _, engine, backend = command.split("-")
        return ["run", path, "--engine", engine, "--iters", "3", "--backend", backend]
    sys.exit("error: unknown command '%s'" % command)

def label(n):
    return "%dk" % (n // 1000) if n % 1000 == 0 else str(n)

slowest_10k = None
for shape in shapes:
    for n in sizes:
        path = os.path.join(work, "%s_%s.json" % (shape, label(n)))
        with open(path, "w") as f:
            json.dump(make_plan(shape, n), f)
        for command in commands:
            if shape == "selfloops" and command != "validate":
                continue  # an invalid plan: only its report is measured
            name = "construct_%s_%s_%s_s" % (shape, label(n), command.replace("-", "_"))
            # n streams of its own and "default" (a place kept for it): n + 1 > the limit
            refused = shape == "wide" and command.endswith("-host") and n >= max_host_streams
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            try:
                r = subprocess.run([swp] + argv(command, path), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, timeout=timeout)
            except subprocess.TimeoutExpired:
                print("metric %s timeout s" % name, flush=True)
                if n == 10000: slowest_10k = float("inf")
                continue
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            if refused:  # a stream per task, past the host device's limit: refused, unmeasured
                if r.returncode != 1 or b"max_host_streams" not in r.stderr:
                    sys.exit("error: %s on %s (%d streams): expected the refusal past "
                             "max_host_streams, got exit %d: %s"
                             % (command, path, n, r.returncode, r.stderr.decode().strip()))
                continue
            if r.returncode != (1 if shape == "selfloops" else 0):
                sys.exit("error: %s on %s: exit %d: %s" % (command, path, r.returncode,
                                                           r.stderr.decode().strip()))
            print("metric %s %.3f s" % (name, elapsed), flush=True)
            print("metric %s_cpu_s %.3f s" % (name[:-2], cpu), flush=True)
            if n == 10000:
                slowest_10k = max(slowest_10k or 0.0, elapsed)
if slowest_10k is not None:
    print("metric construct_10k_s %s s" % ("timeout" if slowest_10k == float("inf")
                                           else "%.3f" % slowest_10k))
PY
