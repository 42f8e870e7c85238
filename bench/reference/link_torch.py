"""PyTorch reference for gnn-train --task link: a GCN encoder trained
full-graph on the training edges of a graph file written by gnn-dataset
split-edges, with the loss, negatives and metrics of trainer/tasks/link.c,
so that per-epoch time and test AUC / AP can be compared one to one.

Encoder: L GCN layers, Z = A_gcn dropout(H) W + b, A_gcn = D^-1/2 (A + I)
D^-1/2 on the training graph, ReLU between layers; hidden width --hidden,
output --out-dim. Decoder: s(u, v) = <z_u, z_v>. Each epoch: every
training edge once (an undirected edge as u < v) with --negatives K
negatives; loss = mean softplus(-s_pos) + mean softplus(s_neg); Adam with
L2 weight decay on the first layer only (--decay-scope first, gnn-train's
gcn default) or on every parameter. Every --eval-every epochs the held-out
sets of the file are scored without dropout; the reported test AUC and AP
are those of the epoch of best validation AUC.

--impl torch: A_gcn as a torch CSR tensor (torch.sparse.mm; the backward
by its transpose, built once, as gnn_torch.py's default), negatives
(u, w) with w uniform (torch.randint), as gnn-train draws them.
--impl pyg: PyTorch Geometric's GCNConv (cached) on edge_index and its
negative_sampling (random non-edge pairs), as PyG's link prediction
examples do. --impl dgl: DGL's GraphConv (norm="both") on the graph with
self loops and dgl.dataloading.negative_sampler.Uniform (corrupting the
destination), as DGL's examples do.

Timing: epoch_s is the wall time of one training step (negatives,
forward, loss, backward, Adam), evaluation excluded; epoch_s_mean averages
every epoch but the first of each run.

    $(bench/reference/python.sh [dgl]) bench/reference/link_torch.py GRAPH.h5
        [--impl torch|pyg|dgl] [--layers L] [--hidden H] [--out-dim D]
        [--dropout P] [--lr LR] [--weight-decay WD] [--decay-scope first|all]
        [--negatives K] [--epochs E] [--seed S] [--threads T] [--eval-every N]

Prints one JSON line: test_auc, test_ap, valid_auc, best_epoch,
epoch_s_mean.
"""
import argparse
import json
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
        n = int(f.attrs["num_nodes"])
        indptr = f["indptr"][:].astype(np.int64)
        indices = f["indices"][:].astype(np.int64)
        x = torch.from_numpy(f["feat"][:].astype(np.float32, copy=False)) \
            if "feat" in f else None
        sets = {k: torch.from_numpy(f["link"][k][:].astype(np.int64)).t().contiguous()
                for k in ("valid_pos", "valid_neg", "test_pos", "test_neg")}
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    return n, indices, dst, x, sets


def common_args(epochs):
    """The options every link reference takes, as gnn-train names them."""
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--out-dim", type=int, default=16)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--negatives", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=epochs)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=1)
    return ap


def auc_ap(pos, neg):
    """AUC (ties half) and average precision as scikit-learn computes it."""
    s = np.concatenate([pos, neg])
    y = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]  # end of each run of ties
    tp = np.cumsum(y)[last]
    fp = np.cumsum(1 - y)[last]
    gp = np.diff(np.r_[0, tp])
    gn = np.diff(np.r_[0, fp])
    auc = (gp * (len(neg) - fp) + 0.5 * gp * gn).sum() / (len(pos) * len(neg))
    recall = tp / len(pos)
    ap = (np.diff(np.r_[0, recall]) * tp / (tp + fp)).sum()
    return float(auc), float(ap)


class Torch(torch.nn.Module):
    def __init__(self, n, src, dst, dims):
        super().__init__()
        deg = np.bincount(dst, minlength=n) + 1.0
        rows = np.concatenate([dst, np.arange(n)])
        cols = np.concatenate([src, np.arange(n)])
        val = (1.0 / np.sqrt(deg[rows] * deg[cols])).astype(np.float32)
        a = torch.sparse_coo_tensor(torch.from_numpy(np.stack([rows, cols])),
                                    torch.from_numpy(val), (n, n)).coalesce()
        self.a = a.to_sparse_csr()
        at = torch.sparse_coo_tensor(torch.from_numpy(np.stack([cols, rows])),
                                     torch.from_numpy(val), (n, n)).coalesce()
        self.at = at.to_sparse_csr()  # the backward's, built once
        self.lin = torch.nn.ModuleList(torch.nn.Linear(dims[i], dims[i + 1])
                                       for i in range(len(dims) - 1))
        for lin in self.lin:  # gnn-train's gcn: Glorot weights, zero biases
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)

    def forward(self, x, p):
        for i, lin in enumerate(self.lin):
            x = gnn_torch.SpMM.apply(self.a, self.at, lin(F.dropout(x, p, self.training)))
            if i < len(self.lin) - 1:
                x = x.relu()
        return x


class PyG(torch.nn.Module):
    def __init__(self, edge_index, dims):
        super().__init__()
        from torch_geometric.nn import GCNConv
        self.ei = edge_index
        self.conv = torch.nn.ModuleList(GCNConv(dims[i], dims[i + 1], cached=True)
                                        for i in range(len(dims) - 1))

    def forward(self, x, p):
        for i, c in enumerate(self.conv):
            x = c(F.dropout(x, p, self.training), self.ei)
            if i < len(self.conv) - 1:
                x = x.relu()
        return x


class DGL(torch.nn.Module):
    def __init__(self, g, dims):
        super().__init__()
        import dgl
        from dgl.nn import GraphConv
        self.g = dgl.add_self_loop(dgl.remove_self_loop(g))
        self.conv = torch.nn.ModuleList(GraphConv(dims[i], dims[i + 1], norm="both")
                                        for i in range(len(dims) - 1))

    def forward(self, x, p):
        for i, c in enumerate(self.conv):
            x = c(self.g, F.dropout(x, p, self.training))
            if i < len(self.conv) - 1:
                x = x.relu()
        return x


def main():
    ap = common_args(epochs=200)
    ap.add_argument("--impl", default="torch", choices=["torch", "pyg", "dgl"])
    ap.add_argument("--decay-scope", default="first", choices=["first", "all"])
    ap.add_argument("--embed-dim", type=int, default=0,
                    help="a learnable row per node as the input (torch.optim.SparseAdam, "
                         "initialised as gnn-train draws them), features left out")
    ap.add_argument("--embed-lr", type=float, default=None, help="default: --lr")
    ap.add_argument("--identity", action="store_true",
                    help="the identity matrix as the features (the GAE paper's featureless "
                         "setting)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    n, src, dst, x, sets = load(a.graph)
    table = None
    if a.identity:
        x = torch.eye(n)
    elif a.embed_dim > 0:
        table = torch.nn.Embedding(n, a.embed_dim, sparse=True)
        bound = 1.0 / np.sqrt(a.embed_dim)
        torch.nn.init.uniform_(table.weight, -bound, bound)
        table_opt = torch.optim.SparseAdam(table.parameters(),
                                           lr=a.embed_lr if a.embed_lr else a.lr)
        ids = torch.arange(n)
    elif x is None:
        ap.error(f"{a.graph} has no features: give --embed-dim D or --identity")
    dims = [a.embed_dim if table is not None else x.shape[1]] + [a.hidden] * (a.layers - 1) + \
        [a.out_dim]
    keep = src < dst  # each undirected training edge once
    pos = torch.from_numpy(np.stack([src[keep], dst[keep]]))
    P, K = pos.shape[1], a.negatives
    if a.impl == "torch":
        model = Torch(n, src, dst, dims)
    elif a.impl == "pyg":
        model = PyG(torch.from_numpy(np.stack([src, dst])), dims)
        from torch_geometric.utils import negative_sampling
    else:
        import dgl
        g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
        model = DGL(g, dims)
        gpos = dgl.graph((pos[0], pos[1]), num_nodes=n)
        sampler = dgl.dataloading.negative_sampler.Uniform(K)
    first = list(model.parameters())[:2]
    rest = list(model.parameters())[2:]
    groups = [{"params": first, "weight_decay": a.weight_decay},
              {"params": rest, "weight_decay": a.weight_decay if a.decay_scope == "all" else 0.0}]
    opt = torch.optim.Adam(groups, lr=a.lr)

    def score(z, e):
        return (z[e[0]] * z[e[1]]).sum(1)

    best, times = (-1.0, None, None, 0), []
    for epoch in range(1, a.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        if a.impl == "torch":
            neg = torch.stack([pos[0].repeat_interleave(K), torch.randint(0, n, (P * K,))])
        elif a.impl == "pyg":
            neg = negative_sampling(pos, num_nodes=n, num_neg_samples=P * K)
        else:
            ns, nd = sampler(gpos, torch.arange(P))
            neg = torch.stack([ns, nd])
        opt.zero_grad()
        if table is not None:
            table_opt.zero_grad()
            x = table(ids)
        z = model(x, a.dropout)
        loss = F.softplus(-score(z, pos)).mean() + F.softplus(score(z, neg)).mean()
        loss.backward()
        opt.step()
        if table is not None:
            table_opt.step()
            x = table.weight.detach()
        dt = time.perf_counter() - t0
        if epoch > 1:
            times.append(dt)
        if a.eval_every and (epoch % a.eval_every == 0 or epoch == a.epochs):
            model.eval()
            with torch.no_grad():
                z = model(x, 0.0)
                m = {k: score(z, e).numpy() for k, e in sets.items()}
            va, _ = auc_ap(m["valid_pos"], m["valid_neg"])
            ta, tp = auc_ap(m["test_pos"], m["test_neg"])
            if va > best[0]:
                best = (va, ta, tp, epoch)
    print(json.dumps({"impl": a.impl, "torch": torch.__version__, "test_auc": best[1],
                      "test_ap": best[2], "valid_auc": best[0], "best_epoch": best[3],
                      "epoch_s_mean": float(np.mean(times)) if times else None}))


if __name__ == "__main__":
    main()
