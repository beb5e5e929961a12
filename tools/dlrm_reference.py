#!/usr/bin/python3
"""The DLRM of examples/dlrm trained by a plain PyTorch loop, single process: the anchor
docs/dlrm.md compares dlrm_train against.

Same model (bottom MLP, sum-pooled EmbeddingBag tables, pairwise dot interaction, top MLP, BCE),
same sizes, same record files (the dataset dlrm_train generated: pass its --data directory's
train/ folder), same optimizer (SGD; sparse gradients for the tables). Only the initial weights
differ (PyTorch's initialisers): the figure is the loop's speed, with its loss as a sanity
check. Records are parsed once before the clock starts; the timed loop takes shuffled batches
of tensors already in memory, so it does less than dlrm_train, which reads and parses every batch.

  /usr/bin/python3 tools/dlrm_reference.py (Debian python3-torch) --data /tmp/swp-dlrm-XXX/train --iters 500 [--batch 256]

Prints `metric python_iters_per_s N iters/s` and `metric python_final_loss L bce`.
"""

import argparse
import struct
import sys
import time
from pathlib import Path

import numpy as np
import torch


def read_records(path):
    """Payloads of one swp record file (docs/io.md: 64-byte header, frames, index)."""
    data = path.read_bytes()
    if data[:8] != b"SWPRECv1":
        sys.exit(f"error: {path}: not a swp record file")
    count, index_offset = struct.unpack_from("<QQ", data, 16)
    out = []
    for i in range(count):
        offset, length = struct.unpack_from("<QQ", data, index_offset + 16 * i)
        start = offset + 16  # u32 length, u32 zero, u64 checksum
        out.append(data[start:start + length])
    return out


def parse(payloads, tables):
    dense, labels, bags = [], [], [[] for _ in range(tables)]
    for p in payloads:
        magic, d, t = struct.unpack_from("<III", p, 0)
        if magic != 0x4D524C44 or t != tables:
            sys.exit("error: the records are not dlrm_train's samples for --tables %d" % tables)
        at = 12
        labels.append(struct.unpack_from("<f", p, at)[0])
        at += 4
        dense.append(struct.unpack_from("<%df" % d, p, at))
        at += 4 * d
        lengths = struct.unpack_from("<%dI" % t, p, at)
        at += 4 * t
        for k, n in enumerate(lengths):
            bags[k].append(np.frombuffer(p, dtype="<u4", count=n, offset=at).astype(np.int64))
            at += 4 * n
    return np.array(dense, np.float32), np.array(labels, np.float32), bags


class DLRM(torch.nn.Module):
    def __init__(self, dense, tables, rows, dim, bottom, top):
        super().__init__()

        def mlp(sizes, relu_last):
            layers = []
            for i in range(len(sizes) - 1):
                layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
                if relu_last or i + 2 < len(sizes):
                    layers.append(torch.nn.ReLU())
            return torch.nn.Sequential(*layers)

        self.bottom = mlp([dense] + bottom + [dim], True)
        self.tables = torch.nn.ModuleList(
            torch.nn.EmbeddingBag(rows, dim, mode="sum", sparse=True) for _ in range(tables))
        features = tables + 1
        self.top = mlp([dim + features * (features - 1) // 2] + top + [1], False)
        self.tri = torch.tril_indices(features, features, offset=-1)

    def forward(self, dense, ids, offsets):
        x = self.bottom(dense)
        emb = [t(i, o) for t, i, o in zip(self.tables, ids, offsets)]
        f = torch.stack([x] + emb, dim=1)
        z = torch.bmm(f, f.transpose(1, 2))[:, self.tri[0], self.tri[1]]
        return self.top(torch.cat([x, z], dim=1)).squeeze(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--tables", type=int, default=8)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--emb-lr", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(7)
    files = sorted(a.data.glob("*.swprec"))
    if not files:
        sys.exit(f"error: --data {a.data}: no *.swprec files")
    payloads = [p for f in files for p in read_records(f)]
    dense, labels, bags = parse(payloads, a.tables)
    n = len(labels)
    model = DLRM(dense.shape[1], a.tables, a.rows, a.dim, [64], [64])
    dense_params = [p for name, p in model.named_parameters() if not name.startswith("tables")]
    opt_dense = torch.optim.SGD(dense_params, lr=a.lr)
    opt_sparse = torch.optim.SGD(model.tables.parameters(), lr=a.emb_lr)
    rng = np.random.default_rng(2019)
    order = rng.permutation(n)
    dense_t, labels_t = torch.from_numpy(dense), torch.from_numpy(labels)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses = []
    start = time.perf_counter()
    for it in range(a.iters):
        lo = (it * a.batch) % (n - a.batch + 1)
        idx = order[lo:lo + a.batch]
        ids, offsets = [], []
        for k in range(a.tables):
            sel = [bags[k][i] for i in idx]
            lens = np.fromiter((len(s) for s in sel), np.int64, len(sel))
            ids.append(torch.from_numpy(np.concatenate(sel)))
            offsets.append(torch.from_numpy(np.concatenate(([0], np.cumsum(lens)[:-1]))))
        sel = torch.from_numpy(idx)
        logits = model(dense_t[sel], ids, offsets)
        loss = loss_fn(logits, labels_t[sel])
        opt_dense.zero_grad()
        opt_sparse.zero_grad()
        loss.backward()
        opt_dense.step()
        opt_sparse.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    tail = losses[-max(1, len(losses) // 10):]
    print(f"metric python_iters_per_s {a.iters / seconds:.6g} iters/s")
    print(f"metric python_final_loss {sum(tail) / len(tail):.6g} bce")


if __name__ == "__main__":
    main()
