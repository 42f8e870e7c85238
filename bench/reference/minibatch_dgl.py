"""DGL reference for gnn-train's mini-batch training: GraphSAGE on sampled
blocks, the way DGL's own mini-batch examples train it, with gnn-train's
settings, so that the time of an epoch can be compared one to one.

Each epoch shuffles the training nodes and cuts them into batches of
--batch-size seeds; dgl.dataloading.NeighborSampler draws --fanouts
in-neighbours per node and hop (given nearest hop first, as gnn-train's
--fanouts; DGL's own list runs from the input layer, so it gets them
reversed), uniformly without replacement; dgl.dataloading.DataLoader
yields the blocks, the input nodes' feature rows are gathered from the
feature tensor and the layers run on the blocks: L layers of
dgl.nn.SAGEConv(aggregator_type="mean") (fc_self on the destinations,
fc_neigh on the mean of the sources, a bias), ReLU between them, dropout
on every layer's input. Adam (torch.optim.Adam, L2 decay on every
parameter, gnn-train's default scope for sage), mean softmax
cross-entropy over the batch's seeds. No evaluation: the epoch is
training only. --embed-dim D trains a graph without features the way
DistDGL does: each node's input is a learnable D-wide row of a
dgl.nn.NodeEmbedding (initialised uniform in [-1/sqrt(D), 1/sqrt(D)], as
gnn-train draws them), the batch's input nodes' rows are read from it and
updated by dgl.optim.SparseAdam (lr --embed-lr, default --lr) after each
step, its gradient trace cleared before each (zero_grad, as DGL's
examples do: without it every step would apply again the gradients of
all earlier ones).

--workers 0 samples in the training loop (gnn-train --prefetch 0);
--workers N > 0 samples in N worker processes ahead of it (DGL's
DataLoader with num_workers, its way of overlapping sampling with
compute, as gnn-train's --sampler-threads with --prefetch).

    $(bench/reference/python.sh dgl) bench/reference/minibatch_dgl.py GRAPH.h5
        [--layers 3] [--hidden 256] [--fanouts 15,10,5] [--batch-size 1024]
        [--epochs 1] [--dropout 0.5] [--lr 0.01] [--weight-decay 5e-4]
        [--threads T] [--workers N] [--seed S] [--log-json FILE]
        [--embed-dim D] [--embed-lr LR]

Prints one JSON line: epoch_s (the mean over the epochs; the first is
kept, as gnn-train's mini-batch epochs are one each), batches,
sampled_edges (every block's edges, summed over the epoch), input_nodes
(mean per batch), loss (the last epoch's mean over its seeds), versions.
"""
import argparse
import json
import time
import warnings

import h5py
import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")


def load(path):
    """The in-edge CSR (row v lists the sources of edges u -> v), features,
    labels and the training split."""
    with h5py.File(path, "r") as f:
        n = int(f.attrs["num_nodes"])
        indptr = torch.from_numpy(f["indptr"][:].astype(np.int64))
        indices = torch.from_numpy(f["indices"][:].astype(np.int64))
        x = torch.from_numpy(f["feat"][:].astype(np.float32, copy=False)) \
            if "feat" in f else None
        y = torch.from_numpy(f["label"][:].astype(np.int64))
        train = torch.from_numpy(f["split"]["train"][:].astype(np.int64))
    return n, indptr, indices, x, y, train


class Sage(torch.nn.Module):
    def __init__(self, dims, dropout):
        super().__init__()
        from dgl.nn import SAGEConv
        self.dropout = dropout
        self.convs = torch.nn.ModuleList(
            SAGEConv(fin, fout, "mean") for fin, fout in zip(dims[:-1], dims[1:]))

    def forward(self, blocks, x):
        h = x
        last = len(self.convs) - 1
        for l, (conv, block) in enumerate(zip(self.convs, blocks)):
            h = conv(block, F.dropout(h, self.dropout, self.training))
            if l != last:
                h = F.relu(h)
        return h


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graph")
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", default="15,10,5", help="nearest hop first, as gnn-train's")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-json", metavar="FILE")
    p.add_argument("--embed-dim", type=int, default=0,
                   help="a learnable row per node as the input (NodeEmbedding + SparseAdam)")
    p.add_argument("--embed-lr", type=float, default=None, help="default: --lr")
    o = p.parse_args()
    fanouts = [int(v) for v in o.fanouts.split(",")]
    if len(fanouts) != o.layers:
        p.error(f"--fanouts has {len(fanouts)} entries for {o.layers} layers")
    if o.threads:
        torch.set_num_threads(o.threads)
    import dgl
    torch.manual_seed(o.seed)
    dgl.seed(o.seed)

    t0 = time.perf_counter()
    n, indptr, indices, x, y, train = load(o.graph)
    g = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.long))), num_nodes=n)
    g.create_formats_()
    del indptr, indices
    load_s = time.perf_counter() - t0

    classes = int(y.max()) + 1
    emb = emb_opt = None
    if o.embed_dim > 0:
        bound = 1.0 / np.sqrt(o.embed_dim)
        emb = dgl.nn.NodeEmbedding(n, o.embed_dim, "rows",
                                   init_func=lambda t: torch.nn.init.uniform_(t, -bound, bound))
        emb_opt = dgl.optim.SparseAdam(params=[emb], lr=o.embed_lr or o.lr)
    elif x is None:
        p.error(f"{o.graph} has no features: give --embed-dim D")
    dims = [o.embed_dim if emb else x.shape[1]] + [o.hidden] * (o.layers - 1) + [classes]
    model = Sage(dims, o.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    # DGL's fanouts run from the input layer to the seeds.
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))
    loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=o.batch_size, shuffle=True,
                                        drop_last=False, num_workers=o.workers)
    log = open(o.log_json, "w") if o.log_json else None
    times, loss_mean, batches, edges, inputs = [], 0.0, 0, 0, 0
    for epoch in range(1, o.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        total, count, batches, edges, inputs = 0.0, 0, 0, 0, 0
        for input_nodes, seeds, blocks in loader:
            h = emb(input_nodes) if emb else x[input_nodes]
            opt.zero_grad()
            if emb_opt:
                emb_opt.zero_grad()  # clears the rows' gradient trace of the last step
            out = model(blocks, h)
            loss = F.cross_entropy(out, y[seeds])
            loss.backward()
            opt.step()
            if emb_opt:
                emb_opt.step()
            total += loss.item() * len(seeds)
            count += len(seeds)
            batches += 1
            edges += sum(b.num_edges() for b in blocks)
            inputs += len(input_nodes)
        epoch_s = time.perf_counter() - t0
        times.append(epoch_s)
        loss_mean = total / max(count, 1)
        if log:
            log.write(json.dumps({"epoch": epoch, "loss": loss_mean, "epoch_s": epoch_s,
                                  "batches": batches, "sampled_edges": edges}) + "\n")
    res = {"graph": o.graph, "impl": "dgl", "layers": o.layers, "hidden": o.hidden,
           "fanouts": o.fanouts, "batch_size": o.batch_size, "epochs": o.epochs,
           "workers": o.workers, "threads": torch.get_num_threads(), "embed_dim": o.embed_dim,
           "epoch_s": float(np.mean(times)), "batches": batches, "sampled_edges": edges,
           "input_nodes_mean": inputs / max(batches, 1), "loss": loss_mean, "load_s": load_s,
           "torch": torch.__version__, "dgl": dgl.__version__}
    if log:
        log.write(json.dumps(dict({"final": True}, **res)) + "\n")
        log.close()
    print(json.dumps(res))


if __name__ == "__main__":
    main()
