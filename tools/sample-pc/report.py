#!/usr/bin/env python3
"""Reports samples written by tools/sample-pc/sampler.cpp (see tools/sample-pc.sh).

  report.py functions SAMPLES [SAMPLES...]   samples per function (the outermost frame of
                                             the inline chain), one column per file
  report.py lines SAMPLES [SAMPLES...]       samples per source line (the innermost frame)
  report.py annotate SYMBOL SAMPLES          the disassembly of SYMBOL (as `nm -C` prints it)
                                             with the samples on each instruction

Columns of several files compare runs of the same length (e.g. two engines over the same
number of iterations): a difference in samples is a difference in time.
"""
import collections
import re
import subprocess
import sys

TOP = 45


def load(path):
    counts = collections.Counter()
    with open(path) as f:
        for line in f:
            module, offset = line.split()
            counts[(module, int(offset, 16) if module != "?" else 0)] += 1
    return counts


def resolve(runs):
    """(module, offset) -> inline chain [(function, file:line), ...], innermost first."""
    wanted = collections.defaultdict(set)
    for run in runs:
        for module, offset in run:
            if module != "?":
                wanted[module].add(offset)
    frames = {}
    for module, offsets in wanted.items():
        offsets = sorted(offsets)
        out = subprocess.run(["addr2line", "-a", "-f", "-i", "-C", "-e", module] +
                             [hex(o) for o in offsets], capture_output=True, text=True).stdout
        address, chain, pending = None, [], None
        for line in out.splitlines():
            if re.fullmatch(r"0x[0-9a-f]+", line):
                if address is not None:
                    frames[(module, address)] = chain
                address, chain, pending = int(line, 16), [], None
            elif pending is None:
                pending = line
            else:
                chain.append((pending, line.split(" (")[0].split("/")[-1]))
                pending = None
        if address is not None:
            frames[(module, address)] = chain
    return frames


def table(runs, key):
    columns = []
    for run in runs:
        column = collections.Counter()
        for sample, n in run.items():
            column[key(sample)] += n
        columns.append(column)
    keys = sorted(set().union(*columns), key=lambda k: -max(c[k] for c in columns))
    print(" ".join("%8d" % sum(c.values()) for c in columns), "  (all samples)")
    for k in keys[:TOP]:
        print(" ".join("%8d" % c[k] for c in columns), " ", k)


def annotate(symbol, path):
    run = load(path)
    modules = {module for module, _ in run if module != "?"}
    for module in sorted(modules):
        for line in subprocess.run(["nm", "-S", "-C", "--defined-only", module],
                                   capture_output=True, text=True).stdout.splitlines():
            parts = line.split(" ", 3)
            if len(parts) == 4 and parts[3] == symbol:
                start, size = int(parts[0], 16), int(parts[1], 16)
                inside = sum(n for (m, o), n in run.items() if m == module and start <= o < start + size)
                print(f"{module}: {symbol}, {size} bytes, {inside} samples")
                dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C",
                                       "--start-address=%#x" % start,
                                       "--stop-address=%#x" % (start + size), module],
                                      capture_output=True, text=True).stdout
                for text in dump.splitlines():
                    m = re.match(r"\s*([0-9a-f]+):\s*(.*)", text)
                    if m:
                        n = run.get((module, int(m.group(1), 16)), 0)
                        print("%7s  %s  %s" % (n or "", m.group(1), m.group(2)))
                return
    sys.exit(f"report.py: no symbol '{symbol}' in {', '.join(sorted(modules))}")


def main(argv):
    if len(argv) < 3 or argv[1] not in ("functions", "lines", "annotate"):
        sys.exit(__doc__)
    if argv[1] == "annotate":
        if len(argv) != 4:
            sys.exit(__doc__)
        return annotate(argv[2], argv[3])
    runs = [load(p) for p in argv[2:]]
    frames = resolve(runs)

    def outer(sample):
        chain = frames.get(sample)
        return chain[-1][0][:100] if chain else sample[0].split("/")[-1] + " (no symbol)"

    def inner(sample):
        chain = frames.get(sample)
        return f"{chain[0][1]} {chain[0][0][:70]}" if chain else sample[0].split("/")[-1] + " (no symbol)"

    table(runs, outer if argv[1] == "functions" else inner)


if __name__ == "__main__":
    main(sys.argv)
