#!/usr/bin/env python3
"""Random plans through the `swp` CLI: every plan `swp validate` accepts must run.

Each seed makes one random plan (tasks on random lanes and streams, stages, intra and inter
dependencies, globally ordered tasks, jitter); plans that validation refuses are skipped.
Each valid plan goes through `order`, `analyze`, `schedule`, `profile`, a sim run writing
`--trace` (read back as JSON) and `--svg`, `tune` (small plans), and `swp run` on both engines
on host and sim with random `--workers`, `--iters` and `--max-depth`. A command that exits
non-zero or runs past --timeout is a failure: the plan is kept in --keep and the command
printed. Exit 1 when any failed.

    tools/cli-soak.py --swp build/src/cli/swp --first 1 --count 500
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile


def random_plan(rng, max_tasks, max_stage):
    n = rng.randint(1, max_tasks)
    stages = sorted(rng.randint(0, max_stage) for _ in range(n))
    names = [f"T{i}" for i in range(n)]
    streams = [f"s{k}" for k in range(rng.randint(1, 3))] + ["default"]
    lanes = [f"l{k}" for k in range(rng.randint(1, 4))] + ["default"]
    tasks = []
    for i in range(n):
        task = {"name": names[i], "stage": stages[i], "stream": rng.choice(streams),
                "thread_group": rng.choice(lanes), "cpu_us": rng.choice([0, 0, 1, 5, 20]),
                "device_us": rng.choice([0, 0, 2, 10, 50])}
        if rng.random() < 0.2:
            task["globally_ordered"] = True
        if rng.random() < 0.1:
            task["jitter_every"] = rng.randint(1, 5)
            task["jitter_device_us"] = rng.choice([0, 100])
        tasks.append(task)
    intra = [[names[j], names[i]] for j in range(n) for i in range(j) if rng.random() < 0.3]
    inter = [[names[rng.randrange(n)], names[rng.randrange(n)]] for _ in range(rng.randint(0, 2))]
    return {"tasks": tasks, "intra_iter_deps": intra, "inter_iter_deps": inter}


def commands(swp, rng, path, scratch, n_tasks):
    trace = os.path.join(scratch, "trace.json")
    yield [swp, "order", path], None
    yield [swp, "analyze", path], None
    yield [swp, "schedule", path, "--periods", "12"], None
    yield [swp, "profile", path, "--measure", "3", "--rounds", "1"], None
    yield [swp, "run", path, "--backend", "sim", "--iters", "20", "--trace", trace,
           "--svg", os.path.join(scratch, "trace.svg")], trace
    if n_tasks <= 8:
        yield [swp, "tune", path, "--iters", "20", "--search-iters", "8",
               "--max-candidates", "64"], None
    for engine in ["dataflow", "clock"]:
        for backend in ["host", "sim"]:
            cmd = [swp, "run", path, "--engine", engine, "--backend", backend,
                   "--iters", str(rng.choice([1, 7, 60, 300, 2000])),
                   "--workers", str(rng.choice([0, 1, 2, 3]))]
            if engine == "dataflow" and rng.random() < 0.5:
                cmd += ["--max-depth", str(rng.randint(1, 6))]
            yield cmd, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swp", default="build/src/cli/swp", help="the swp binary")
    parser.add_argument("--first", type=int, default=1, help="first seed")
    parser.add_argument("--count", type=int, default=200, help="seeds to try")
    parser.add_argument("--max-tasks", type=int, default=40)
    parser.add_argument("--max-stage", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=120, help="seconds per command")
    parser.add_argument("--keep", default="cli-soak-failures", help="where failing plans go")
    args = parser.parse_args()
    if not os.access(args.swp, os.X_OK):
        sys.exit(f"cli-soak: --swp {args.swp}: not an executable (build it first)")

    valid = failures = 0
    with tempfile.TemporaryDirectory(prefix="swp-cli-soak-") as scratch:
        path = os.path.join(scratch, "plan.json")
        for seed in range(args.first, args.first + args.count):
            rng = random.Random(seed)
            plan = random_plan(rng, args.max_tasks, args.max_stage)
            with open(path, "w") as f:
                json.dump(plan, f)
            if subprocess.run([args.swp, "validate", path], capture_output=True).returncode != 0:
                continue
            valid += 1
            for cmd, trace in commands(args.swp, rng, path, scratch, len(plan["tasks"])):
                if trace is not None and os.path.exists(trace):
                    os.remove(trace)  # the last plan's trace must not stand in for this one's
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                    ok, why = r.returncode == 0, f"exit {r.returncode}: {r.stderr[-800:]}"
                    if ok and trace is not None:
                        with open(trace) as f:
                            json.load(f)  # a trace that is not JSON fails here
                except subprocess.TimeoutExpired:
                    ok, why = False, f"still running after {args.timeout} s"
                except (OSError, ValueError) as e:  # no file, or not JSON
                    ok, why = False, f"--trace wrote no JSON: {e}"
                if not ok:
                    failures += 1
                    os.makedirs(args.keep, exist_ok=True)
                    kept = os.path.join(args.keep, f"plan-{seed}.json")
                    with open(kept, "w") as f:
                        json.dump(plan, f)
                    shown = " ".join(kept if c == path else c for c in cmd)
                    print(f"cli-soak: seed {seed}: FAILED: {shown}: {why}", flush=True)
    print(f"cli-soak: seeds {args.first}..{args.first + args.count - 1}: {valid} valid plans, "
          f"{failures} failed commands")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
