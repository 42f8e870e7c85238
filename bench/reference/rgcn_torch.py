"""References for gnn-train --model rgcn: R-GCN (Schlichtkrull et al.) on a
typed graph file (format version 2: gnn-dataset generate hsbm, or ogb on
the ogbn-mag layout), full-graph node classification, with the
definitions of trainer/layers/rgcn.c, so accuracy and per-epoch time
compare one to one.

Layer l:  Z[v] = D[v] W_self + sum_r (1/|N_r(v)|) sum_{u in N_r(v)} D[u] W_r + b
with D = dropout(H), ReLU between layers, one weight per relation (or,
with --num-bases B, W_r = sum_b a[r][b] V_b). Input: every node's
features padded with zeros to the widest type's (as gnn-train reads
them). Adam with weight decay on every layer (gnn-train's scope for
rgcn); cross-entropy on the training nodes; the reported test accuracy
is at the epoch of best validation accuracy.

--impl torch: a plain PyTorch R-GCN: per relation r, the sources of its
source type times W_r, then the per-relation mean as a sparse product
(torch.sparse, the normalised adjacency of r from its source type's rows
to all rows), summed; the products are taken per relation (the usual
PyTorch formulation); the backward multiplies by each relation's
transpose, built once (as gnn_torch.py's default, --spmm cached).
--impl dgl: DGL's dgl.nn.RelGraphConv (regularizer None, or "basis" with
--num-bases; self_loop on; its dropout off and the input dropped as
above) on the homogeneous graph with an edge type per edge, the norm of
each edge 1/|N_r(v)| (DGL's entity-classification example).

Timing: epoch_s is the wall time of one training step (zero_grad,
forward, loss, backward, Adam step), evaluation excluded; epoch_s_mean
averages every epoch but the first of each run.

    $(bench/reference/python.sh [dgl]) bench/reference/rgcn_torch.py GRAPH.h5
        [--impl torch|dgl] [--layers L] [--hidden H] [--num-bases B]
        [--dropout P] [--lr LR] [--weight-decay WD] [--epochs E] [--runs N]
        [--seed S] [--threads T] [--eval-every K]

Prints one JSON line: test_acc (last run), test_acc_mean / _std over the
runs, epoch_s_mean.
"""
import argparse
import json
import math
import os
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gnn_torch  # noqa: E402  (its SpMM: the backward by a transpose built once)


def load(path):
    with h5py.File(path, "r") as f:
        if int(f.attrs["version"]) != 2:
            raise SystemExit(f"{path}: not a typed graph (format version 2)")
        n = int(f.attrs["num_nodes"])
        indptr = f["indptr"][:].astype(np.int64)
        src = f["indices"][:].astype(np.int64)
        etype = f["edge_type"][:].astype(np.int64)
        off = f["node_type_offsets"][:].astype(np.int64)

        def text(a):
            return a.decode() if isinstance(a, bytes) else str(a)

        ntypes = text(f.attrs["node_types"]).split(",")
        rels = [r.split(":") for r in text(f.attrs["relations"]).split(",")]
        widths = []
        for t in ntypes:
            widths.append(f["node_feat"][t].shape[1] if "node_feat" in f and t in f["node_feat"]
                          else 0)
        fmax = max(widths)
        x = np.zeros((n, max(fmax, 1)), dtype=np.float32)
        for i, t in enumerate(ntypes):
            if widths[i]:
                x[off[i]:off[i + 1], :widths[i]] = f["node_feat"][t][:]
        y = torch.from_numpy(f["label"][:].astype(np.int64))
        split = {k: torch.from_numpy(f["split"][k][:].astype(np.int64))
                 for k in ("train", "valid", "test")}
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    rel_src = [ntypes.index(r[0]) for r in rels]
    return n, torch.from_numpy(x), src, dst, etype, off, rel_src, y, split


def rel_norm(dst, etype, n, nrel):
    """1 / |N_r(v)| for every edge (v its destination, r its relation)."""
    key = dst * nrel + etype
    cnt = np.bincount(key, minlength=n * nrel)
    return (1.0 / cnt[key]).astype(np.float32)


class TorchRGCNLayer(torch.nn.Module):
    def __init__(self, fin, fout, nrel, bases):
        super().__init__()
        self.bases = bases
        self.w_self = torch.nn.Parameter(torch.empty(fin, fout))
        if bases:
            self.v = torch.nn.Parameter(torch.empty(bases, fin, fout))
            self.a = torch.nn.Parameter(torch.empty(nrel, bases))
            torch.nn.init.xavier_uniform_(self.a)
            for b in range(bases):
                torch.nn.init.xavier_uniform_(self.v[b])
        else:
            self.w = torch.nn.Parameter(torch.empty(nrel, fin, fout))
            for r in range(nrel):
                torch.nn.init.xavier_uniform_(self.w[r])
        self.b = torch.nn.Parameter(torch.zeros(fout))
        torch.nn.init.xavier_uniform_(self.w_self)

    def forward(self, adj, h):
        w = torch.einsum("rb,bio->rio", self.a, self.v) if self.bases else self.w
        out = h @ self.w_self + self.b
        for r, (a, at, lo, hi) in enumerate(adj):
            out = out + gnn_torch.SpMM.apply(a, at, h[lo:hi] @ w[r])
        return out


class DglRGCNLayer(torch.nn.Module):
    def __init__(self, fin, fout, nrel, bases):
        super().__init__()
        import dgl.nn as dglnn
        self.conv = dglnn.RelGraphConv(fin, fout, nrel,
                                       regularizer="basis" if bases else None,
                                       num_bases=bases if bases else None, self_loop=True)

    def forward(self, g, h):
        return self.conv(g, h, g.edata["etype"], g.edata["norm"])


class Net(torch.nn.Module):
    def __init__(self, layer, dims, nrel, bases, dropout):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            [layer(dims[i], dims[i + 1], nrel, bases) for i in range(len(dims) - 1)])
        self.dropout = dropout

    def forward(self, g, x):
        h = x
        for i, l in enumerate(self.layers):
            h = F.dropout(h, self.dropout, self.training)
            h = l(g, h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h


def run(o, r, g, x, y, split, classes, nrel, log):
    torch.manual_seed(o.seed + r)
    dims = [x.shape[1]] + [o.hidden] * (o.layers - 1) + [classes]
    layer = TorchRGCNLayer if o.impl == "torch" else DglRGCNLayer
    model = Net(layer, dims, nrel, o.num_bases, o.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    train, y_train = split["train"], y[split["train"]]
    best = {"valid_acc": -1.0, "valid_loss": math.inf, "test_acc": 0.0, "epoch": -1}
    times = []
    for epoch in range(1, o.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(g, x)
        loss = F.cross_entropy(out[train], y_train)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if epoch % o.eval_every == 0 or epoch == o.epochs:
            model.eval()
            with torch.no_grad():
                out = model(g, x)
                pred = out.argmax(1)
                acc = {k: (pred[v] == y[v]).float().mean().item() for k, v in split.items()}
                vloss = F.cross_entropy(out[split["valid"]], y[split["valid"]]).item()
            va = acc["valid"]
            if va > best["valid_acc"] or (va == best["valid_acc"] and vloss < best["valid_loss"]):
                best = {"valid_acc": va, "valid_loss": vloss, "test_acc": acc["test"],
                        "epoch": epoch}
            if log:
                log.write(json.dumps({"run": r, "epoch": epoch, "loss": loss.item(),
                                      "valid_acc": va, "test_acc": acc["test"]}) + "\n")
    return best, times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graph")
    p.add_argument("--impl", choices=("torch", "dgl"), default="torch")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--num-bases", type=int, default=0)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=1)
    p.add_argument("--log-json", metavar="FILE")
    o = p.parse_args()
    if o.threads:
        torch.set_num_threads(o.threads)
    n, x, src, dst, etype, off, rel_src, y, split = load(o.graph)
    nrel = len(rel_src)
    classes = int(y.max()) + 1
    norm = rel_norm(dst, etype, n, nrel)
    if o.impl == "dgl":
        import dgl
        g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
        g.edata["etype"] = torch.from_numpy(etype)
        g.edata["norm"] = torch.from_numpy(norm).unsqueeze(1)
    else:  # per relation: rows = all nodes, columns = its source type's nodes
        g = []
        for r in range(nrel):
            m = etype == r
            lo, hi = int(off[rel_src[r]]), int(off[rel_src[r] + 1])
            idx = torch.from_numpy(np.stack([dst[m], src[m] - lo]))
            a = torch.sparse_coo_tensor(idx, torch.from_numpy(norm[m]), (n, hi - lo))
            at = torch.sparse_coo_tensor(idx.flip(0), torch.from_numpy(norm[m]), (hi - lo, n))
            g.append((a.coalesce().to_sparse_csr(), at.coalesce().to_sparse_csr(), lo, hi))
    del src, dst, etype
    log = open(o.log_json, "w") if o.log_json else None
    tests, warm = [], []
    for r in range(o.runs):
        best, times = run(o, r, g, x, y, split, classes, nrel, log)
        tests.append(best["test_acc"])
        warm.extend(times[1:] if len(times) > 1 else times)
    print(json.dumps({"impl": o.impl, "model": "rgcn", "num_bases": o.num_bases,
                      "runs": o.runs, "epochs": o.epochs, "threads": torch.get_num_threads(),
                      "test_acc": tests[-1], "test_acc_mean": float(np.mean(tests)),
                      "test_acc_std": float(np.std(tests)), "run_test_acc": tests,
                      "epoch_s_mean": float(np.mean(warm)), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
