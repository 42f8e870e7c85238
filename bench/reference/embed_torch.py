"""PyTorch reference for gnn-train --embed-dim: a model whose input is a
learnable row per node (no features), trained full-graph on a graph file
(gnn-dataset ogb --no-features, or generate sbm -f 0), with the
definitions of trainer/embed.h, so accuracy and per-epoch time compare
one to one.

The table: n x D (--embed-dim), element (v, k) initialised uniform in
[-1/sqrt(D), 1/sqrt(D)] (the scale of a unit-length row; the draw itself
is torch's, so runs match gnn-train in distribution, not bit for bit).
The model (gnn_torch.py's GCN or GraphSAGE, --model) reads the table's
rows as its input, dropout on them as on every layer's input. The table
trains with its own optimiser, row-sparse: --embed-optimizer adam is
torch.optim.SparseAdam (lazy Adam: rows the step does not read keep
their moments; full-graph training reads every row), adagrad is
torch.optim.Adagrad on a sparse gradient; --embed-lr (default --lr). The
model's parameters train with Adam and weight decay on the first layer
(gcn) as gnn_torch.py does. Task: node classification (softmax
cross-entropy on the training nodes); the reported test accuracy is at
the epoch of best validation accuracy.

--impl dgl: the table is dgl.nn.NodeEmbedding with dgl.optim.SparseAdam
(or SparseAdagrad), the model DGL's layers (gnn_torch.py's DglNet), as
DGL's examples train featureless nodes.

Timing: epoch_s is the wall time of one training step (both optimisers'
zero_grad and step, forward, loss, backward), evaluation excluded;
epoch_s_mean averages every epoch but the first of each run.

    $(bench/reference/python.sh [dgl]) bench/reference/embed_torch.py GRAPH.h5
        [--impl torch|dgl] [--model gcn|sage] [--embed-dim D] [--embed-lr LR]
        [--embed-optimizer adam|adagrad] [--layers L] [--hidden H]
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

import gnn_torch  # noqa: E402


def load(path):
    with h5py.File(path, "r") as f:
        n = int(f.attrs["num_nodes"])
        indptr = f["indptr"][:].astype(np.int64)
        indices = f["indices"][:].astype(np.int64)
        y = torch.from_numpy(f["label"][:].astype(np.int64))
        split = {k: torch.from_numpy(f["split"][k][:].astype(np.int64))
                 for k in ("train", "valid", "test")}
        tidy = bool(f.attrs.get("sorted", 0)) and bool(f.attrs.get("deduplicated", 0))
        symmetric = bool(f.attrs.get("symmetric", 0))
    return n, indptr, indices, y, split, tidy, symmetric


class TorchTable:
    """nn.Embedding with sparse gradients and its row-sparse optimiser."""

    def __init__(self, n, d, o):
        self.emb = torch.nn.Embedding(n, d, sparse=True)
        bound = 1.0 / math.sqrt(d)
        torch.nn.init.uniform_(self.emb.weight, -bound, bound)
        if o.embed_optimizer == "adam":
            self.opt = torch.optim.SparseAdam(self.emb.parameters(), lr=o.embed_lr)
        else:
            self.opt = torch.optim.Adagrad(self.emb.parameters(), lr=o.embed_lr)
        self.ids = torch.arange(n)

    def rows(self, train):
        return self.emb(self.ids)

    def zero_grad(self):
        self.opt.zero_grad()

    def step(self):
        self.opt.step()


class DglTable:
    """dgl.nn.NodeEmbedding and DGL's sparse optimiser."""

    def __init__(self, n, d, o):
        import dgl
        bound = 1.0 / math.sqrt(d)

        def init(t):
            return torch.nn.init.uniform_(t, -bound, bound)

        self.emb = dgl.nn.NodeEmbedding(n, d, f"embed{id(self)}", init_func=init)
        kind = dgl.optim.SparseAdam if o.embed_optimizer == "adam" else dgl.optim.SparseAdagrad
        self.opt = kind(params=[self.emb], lr=o.embed_lr)
        self.ids = torch.arange(n)

    def rows(self, train):
        return self.emb(self.ids)

    def zero_grad(self):
        # clears the rows' gradient trace: without it every later step applies
        # the traced (stale) gradients of all earlier steps again
        self.opt.zero_grad()

    def step(self):
        self.opt.step()


def run(o, r, n, op, y, split, classes, log):
    torch.manual_seed(o.seed + r)
    table = (TorchTable if o.impl == "torch" else DglTable)(n, o.embed_dim, o)
    dims = [o.embed_dim] + [o.hidden] * (o.layers - 1) + [classes]
    model = (gnn_torch.Net if o.impl == "torch" else gnn_torch.DglNet)(o.model, dims, o.dropout)
    first = model.layer_params(0)
    rest = [p for l in range(1, o.layers) for p in model.layer_params(l)]
    scope_wd = o.weight_decay if o.decay_scope == "all" else 0.0
    groups = [{"params": first, "weight_decay": o.weight_decay}]
    if rest:
        groups.append({"params": rest, "weight_decay": scope_wd})
    opt = torch.optim.Adam(groups, lr=o.lr)
    train, y_train = split["train"], y[split["train"]]
    best = {"valid_acc": -1.0, "valid_loss": math.inf, "test_acc": 0.0, "epoch": -1}
    times = []
    for epoch in range(1, o.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        table.zero_grad()
        out = model(op, table.rows(True))
        loss = F.cross_entropy(out[train], y_train)
        loss.backward()
        opt.step()
        table.step()
        times.append(time.perf_counter() - t0)
        if epoch % o.eval_every == 0 or epoch == o.epochs:
            model.eval()
            with torch.no_grad():
                out = model(op, table.rows(False))
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
    p.add_argument("--model", choices=("gcn", "sage"), default="gcn")
    p.add_argument("--embed-dim", type=int, default=64)
    p.add_argument("--embed-lr", type=float, default=None, help="default: --lr")
    p.add_argument("--embed-optimizer", choices=("adam", "adagrad"), default="adam")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--decay-scope", choices=("first", "all"), default=None)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=1)
    p.add_argument("--log-json", metavar="FILE")
    o = p.parse_args()
    if o.embed_lr is None:
        o.embed_lr = o.lr
    if o.decay_scope is None:
        o.decay_scope = "first" if o.model == "gcn" else "all"
    if o.threads:
        torch.set_num_threads(o.threads)
    n, indptr, indices, y, split, tidy, symmetric = load(o.graph)
    classes = int(y.max()) + 1
    if o.impl == "dgl":
        op = gnn_torch.dgl_graph(n, indptr, indices, o.model)
    elif o.model == "gcn":
        op = gnn_torch.Operator(n, *gnn_torch.gcn_operator(n, indptr, indices, tidy), symmetric,
                                "cached")
    else:
        op = gnn_torch.Operator(n, *gnn_torch.mean_operator(n, indptr, indices, tidy), False,
                                "cached")
    del indptr, indices
    log = open(o.log_json, "w") if o.log_json else None
    tests, warm = [], []
    for r in range(o.runs):
        best, times = run(o, r, n, op, y, split, classes, log)
        tests.append(best["test_acc"])
        warm.extend(times[1:] if len(times) > 1 else times)
    print(json.dumps({"impl": o.impl, "model": o.model, "embed_dim": o.embed_dim,
                      "runs": o.runs, "epochs": o.epochs, "threads": torch.get_num_threads(),
                      "test_acc": tests[-1], "test_acc_mean": float(np.mean(tests)),
                      "test_acc_std": float(np.std(tests)), "run_test_acc": tests,
                      "epoch_s_mean": float(np.mean(warm)), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
