"""PyTorch reference: a 2-layer GCN (Kipf & Welling) trained full-batch on
a graph file written by gnn-dataset, the way the GCN paper trains Cora:
A+I with symmetric normalisation, hidden 16, dropout 0.5, Adam lr 0.01,
weight decay 5e-4 on the first layer, 200 epochs, test accuracy at the
best validation accuracy. Used to measure how learnable a generated graph
is, and as the reference the trainer's benchmarks compare against.

    python3 bench/reference/gcn_torch.py GRAPH.h5 [--runs N] [--seed S]
                                         [--normalize-features] [--threads T]

Prints one JSON line. Needs Debian's python3-torch and python3-h5py.
"""
import argparse
import json
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F


def load(path, normalize):
    with h5py.File(path, "r") as f:
        n = int(f.attrs["num_nodes"])
        indptr = f["indptr"][:]
        indices = f["indices"][:]
        x = torch.from_numpy(f["feat"][:].astype(np.float32))
        y = torch.from_numpy(f["label"][:].astype(np.int64))
        split = {k: torch.from_numpy(f["split"][k][:].astype(np.int64))
                 for k in ("train", "valid", "test")}
    if normalize:
        s = x.sum(1, keepdim=True)
        x = x / torch.where(s == 0, torch.ones_like(s), s)
    # In-edge CSR: row v lists its sources u. A + I, D^-1/2 (A+I) D^-1/2.
    rows = np.repeat(np.arange(n), np.diff(indptr))
    r = np.concatenate([rows, np.arange(n)])
    c = np.concatenate([indices, np.arange(n)])
    deg = np.bincount(r, minlength=n).astype(np.float32)
    w = 1.0 / np.sqrt(deg[r] * deg[c])
    a = torch.sparse_coo_tensor(np.vstack([r, c]), torch.from_numpy(w.astype(np.float32)),
                                (n, n)).coalesce().to_sparse_csr()
    return a, x, y, split


class GCN(torch.nn.Module):
    def __init__(self, f_in, hidden, classes, dropout):
        super().__init__()
        self.l1 = torch.nn.Linear(f_in, hidden)
        self.l2 = torch.nn.Linear(hidden, classes)
        self.dropout = dropout

    def forward(self, a, x):
        x = F.dropout(x, self.dropout, self.training)
        x = F.relu(a @ self.l1(x))
        x = F.dropout(x, self.dropout, self.training)
        return a @ self.l2(x)


def run(a, x, y, split, seed, epochs=200):
    torch.manual_seed(seed)
    classes = int(y.max()) + 1
    model = GCN(x.shape[1], 16, classes, 0.5)
    opt = torch.optim.Adam([{"params": model.l1.parameters(), "weight_decay": 5e-4},
                            {"params": model.l2.parameters(), "weight_decay": 0.0}], lr=0.01)
    best_val, best_test = -1.0, 0.0
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        out = model(a, x)
        loss = F.cross_entropy(out[split["train"]], y[split["train"]])
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(a, x).argmax(1)
        acc = {k: (pred[v] == y[v]).float().mean().item() for k, v in split.items()}
        if acc["valid"] > best_val:
            best_val, best_test = acc["valid"], acc["test"]
    return best_val, best_test, (time.perf_counter() - t0) / epochs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--normalize-features", action="store_true")
    p.add_argument("--threads", type=int, default=0)
    o = p.parse_args()
    if o.threads:
        torch.set_num_threads(o.threads)
    a, x, y, split = load(o.graph, o.normalize_features)
    tests, vals, epoch_s = [], [], []
    for i in range(o.runs):
        v, t, e = run(a, x, y, split, o.seed + i)
        vals.append(v)
        tests.append(t)
        epoch_s.append(e)
    print(json.dumps({"graph": o.graph, "runs": o.runs, "test_acc_mean": float(np.mean(tests)),
                      "test_acc_std": float(np.std(tests)), "valid_acc_mean": float(np.mean(vals)),
                      "epoch_s": float(np.mean(epoch_s)), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
