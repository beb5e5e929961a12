#!/usr/bin/env python3
"""Where a load level's latency tail came from (docs/service.md, Finding a tail).

Joins the load generator's trace (service_load --trace) with the server's batch timeline
(micro_batch_service --trace; both stamp the same steady clock) and prints, per 10 ms window
of the level in which a request took longer than 3 x the level's p50 or the compute stream
ran slow: the requests sent, the slowest, how many were over 3 x p50, the batches opened, and
the compute stream's wall and CPU time per request against their medians over the level. A
window is slow when its compute wall time per request is at least --slow x the median: "cpu"
when the CPU time grew as much (the CPU itself ran slower: a busy host), "preempted" when
the thread's run-queue wait (from /proc/<tid>/schedstat) covers at least half of the wall time
the CPU time does not (it waited for a CPU that other threads had), "host" when neither does
(the virtual CPU itself was taken away: steal the guest does not see). The summary says how
many of the requests over 3 x p50 were sent within --after ms after a slow window of each kind.

  tools/service-tail.py LOAD_TRACE SERVER_TRACE [--level load80] [--slow 1.3] [--after 100]
"""
import argparse
import collections
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("load_trace")
    ap.add_argument("server_trace")
    ap.add_argument("--level", default="load80")
    ap.add_argument("--slow", type=float, default=1.3)
    ap.add_argument("--after", type=float, default=100.0, help="ms")
    a = ap.parse_args()

    sent = []  # (sent_us, latency_us)
    with open(a.load_trace) as f:
        next(f)
        for line in f:
            level, s, lat = line.split()
            if level == a.level:
                sent.append((int(s), int(lat)))
    if not sent:
        sys.exit(f"error: {a.load_trace}: no requests of level '{a.level}'")
    sent.sort()
    lats = sorted(l for _, l in sent)
    p50 = lats[(len(lats) + 1) // 2 - 1]
    p99 = lats[-(-99 * len(lats) // 100) - 1]
    t0, t1 = sent[0][0], sent[-1][0]

    batches = []  # (opened_us, requests, compute_cpu_us)
    with open(a.server_trace) as f:
        next(f)
        for line in f:
            v = [int(x) for x in line.split()]
            if t0 <= v[1] <= t1 + 50_000 and v[0] > 0:
                wait = v[10] if len(v) > 10 else -1
                batches.append((v[1], v[0], v[9], v[6] - v[5], wait))
    if not batches:
        sys.exit(f"error: {a.server_trace}: no batches during the level")
    def median(values):
        values = sorted(values)
        return values[len(values) // 2]
    cpu_median = median(cpu / n for _, n, cpu, _, _ in batches)
    wall_median = median(wall / n for _, n, _, wall, _ in batches)

    # per window: sent, max latency, over 3 x p50, batches, requests, compute cpu, compute
    # wall, run-queue wait (None once a batch did not say)
    win = collections.defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0, 0])
    for s, lat in sent:
        w = win[(s - t0) // 10_000]
        w[0] += 1
        w[1] = max(w[1], lat)
        w[2] += lat > 3 * p50
    for opened, n, cpu, wall, wait in batches:
        w = win[(opened - t0) // 10_000]
        w[3] += 1
        w[4] += n
        w[5] += cpu
        w[6] += wall
        w[7] = None if wait < 0 or w[7] is None else w[7] + wait
    kind = {}
    for k, w in win.items():
        if not w[4] or w[6] / w[4] < a.slow * wall_median:
            continue
        if w[5] / w[4] >= a.slow * cpu_median:
            kind[k] = "cpu"
        elif w[7] is None or w[7] >= 0.5 * (w[6] - w[5]):
            kind[k] = "preempted"  # (without schedstat, every wait counts as preemption)
        else:
            kind[k] = "host"
    over = sum(w[2] for w in win.values())
    print(f"{a.level}: {len(sent)} requests, p50 {p50} us, p99 {p99} us, p99/p50 {p99 / p50:.2f}; "
          f"{over} over 3 x p50 ({100 * over / len(sent):.2f}%, the target allows "
          f"{len(sent) // 100})")
    print(f"compute per request: wall {wall_median:.2f} us, CPU {cpu_median:.2f} us "
          f"(medians over {len(batches)} batches)")
    print(" window_ms  sent  max_us  over_3xp50  batches  wall_us/req     cpu_us/req      "
          "wait_us/req  slow")
    for k in sorted(win):
        w = win[k]
        if w[2] or k in kind:
            wall = f"{w[6] / w[4]:5.2f} ({w[6] / w[4] / wall_median:.2f}x)" if w[4] else "-"
            cpu = f"{w[5] / w[4]:5.2f} ({w[5] / w[4] / cpu_median:.2f}x)" if w[4] else "-"
            wait = f"{w[7] / w[4]:5.2f}" if w[4] and w[7] is not None else "-"
            print(f" {k * 10:9d} {w[0]:5d} {w[1]:7d} {w[2]:11d} {w[3]:8d}  {wall:14s}  {cpu:14s}  "
                  f"{wait:11s}  {kind.get(k, '')}")
    after = a.after / 10
    for name in ("cpu", "preempted", "host"):
        starts = [k for k, v in kind.items() if v == name]
        near = sum(w[2] for k, w in win.items() if any(0 <= k - s <= after for s in starts))
        print(f"{len(starts)} slow windows ({name}); {near} of the {over} requests over 3 x p50 "
              f"were sent within {a.after:.0f} ms after one")


if __name__ == "__main__":
    main()
