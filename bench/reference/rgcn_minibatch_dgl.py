"""DGL reference for gnn-train --model rgcn --mode minibatch: R-GCN on
sampled heterogeneous blocks, the way DGL's (and DistDGL's) R-GCN
examples train it, with gnn-train's definitions and settings, so that the
time of an epoch and the accuracy compare one to one.

The typed graph file (format version 2) becomes a DGL heterograph, one
canonical edge type per relation (source type, relation, destination
type), nodes numbered per type. Each epoch shuffles the target type's
training nodes into batches of --batch-size seeds;
dgl.dataloading.NeighborSampler draws, per hop, up to the hop's fanout of
a node's in-neighbours of every relation (an int fanout is per edge type:
gnn-train's typed draws), uniformly without replacement. Layer l on a
block: Z[v] = D[v] W_self + b + sum_r mean over v's sampled in-neighbours
of relation r of D[u] W_r (dgl.nn.HeteroGraphConv of one
dgl.nn.GraphConv(norm="right", no bias) per relation, summed), D =
dropout(H), ReLU between layers. Input rows: a type's features padded
with zeros to the widest type's; with --embed-dim D the nodes of
featureless types read a learnable D-wide row (dgl.nn.NodeEmbedding per
type, initialised uniform in [-1/sqrt(D), 1/sqrt(D)], updated by
dgl.optim.SparseAdam after each step, its gradient trace cleared before
each, DistDGL's way) in the first D columns. Every weight drawn by Glorot
and the biases zero, as gnn-train draws them (--init dgl: the modules'
own, torch.nn.Linear's fan-in bounds for the self weight and its bias).
Adam with weight decay on every dense parameter, mean softmax
cross-entropy over the batch's seeds. After the last epoch the test
nodes are classified on their whole 2-hop neighbourhoods
(MultiLayerFullNeighborSampler), which gnn-train's layer-wise inference
computes too.

    $(bench/reference/python.sh dgl) bench/reference/rgcn_minibatch_dgl.py GRAPH.h5
        [--layers 2] [--hidden 64] [--fanouts 10,10] [--batch-size 1024]
        [--epochs 1] [--dropout 0.5] [--lr 0.01] [--weight-decay 5e-4]
        [--embed-dim D] [--embed-lr LR] [--threads T] [--workers N] [--seed S]
        [--init glorot|dgl]

Prints one JSON line: epoch_s (the mean over the epochs), batches,
sampled_edges (every block's edges, summed over the epoch), loss (the last
epoch's mean over its seeds), test_acc (after the last epoch), versions.
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
    with h5py.File(path, "r") as f:
        if int(f.attrs["version"]) != 2:
            raise SystemExit(f"{path}: not a typed graph (format version 2)")

        def text(a):
            return a.decode() if isinstance(a, bytes) else str(a)

        indptr = f["indptr"][:].astype(np.int64)
        src = f["indices"][:].astype(np.int64)
        etype = f["edge_type"][:].astype(np.int64)
        off = f["node_type_offsets"][:].astype(np.int64)
        ntypes = text(f.attrs["node_types"]).split(",")
        rels = [tuple(r.split(":")) for r in text(f.attrs["relations"]).split(",")]
        target = text(f.attrs["target_type"])
        feats = {t: torch.from_numpy(f["node_feat"][t][:].astype(np.float32))
                 for t in ntypes if "node_feat" in f and t in f["node_feat"]}
        y = f["label"][:].astype(np.int64)
        split = {k: f["split"][k][:].astype(np.int64) for k in ("train", "test")}
    dst = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    return indptr, src, dst, etype, off, ntypes, rels, target, feats, y, split


class RGCN(torch.nn.Module):
    def __init__(self, rels, dims, dropout, init):
        super().__init__()
        import dgl.nn as dglnn
        names = [r[1] for r in rels]
        if len(set(names)) != len(names):  # HeteroGraphConv keys its modules by name
            raise SystemExit("relations share a name: each needs its own weight")
        self.dropout = dropout
        self.convs = torch.nn.ModuleList(
            dglnn.HeteroGraphConv({r[1]: dglnn.GraphConv(fin, fout, norm="right", bias=False,
                                                          allow_zero_in_degree=True)
                                   for r in rels}, aggregate="sum")
            for fin, fout in zip(dims[:-1], dims[1:]))
        self.selfs = torch.nn.ModuleList(torch.nn.Linear(fin, fout, bias=True)
                                         for fin, fout in zip(dims[:-1], dims[1:]))
        if init == "glorot":
            # gnn-train's (and PyG RGCNConv's): every weight by Glorot, biases zero
            # (GraphConv's weights are Glorot already)
            for lin in self.selfs:
                torch.nn.init.xavier_uniform_(lin.weight)
                torch.nn.init.zeros_(lin.bias)

    def forward(self, blocks, h):
        last = len(self.convs) - 1
        for l, (conv, lin, block) in enumerate(zip(self.convs, self.selfs, blocks)):
            d = {t: F.dropout(v, self.dropout, self.training) for t, v in h.items()}
            out = conv(block, d)
            new = {}
            for t in block.dsttypes:
                n = block.num_dst_nodes(t)
                if n == 0:
                    continue
                z = lin(d[t][:n])
                if t in out:
                    z = z + out[t]
                new[t] = F.relu(z) if l != last else z
            h = new
        return h


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graph")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--fanouts", default="10,10", help="nearest hop first, as gnn-train's")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--embed-dim", type=int, default=0)
    p.add_argument("--embed-lr", type=float, default=None, help="default: --lr")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--init", choices=("glorot", "dgl"), default="glorot",
                   help="glorot: every weight by Glorot, biases zero, as gnn-train (default); "
                        "dgl: the modules' own (torch.nn.Linear's fan-in bound for the self "
                        "weight and its bias)")
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
    indptr, src, dst, etype, off, ntypes, rels, target, feats, y, split = load(o.graph)
    tid = {t: i for i, t in enumerate(ntypes)}
    data = {}
    for r, (st, name, dt) in enumerate(rels):
        m = etype == r
        data[(st, name, dt)] = (torch.from_numpy(src[m] - off[tid[st]]),
                                torch.from_numpy(dst[m] - off[tid[dt]]))
    counts = {t: int(off[i + 1] - off[i]) for i, t in enumerate(ntypes)}
    g = dgl.heterograph(data, num_nodes_dict=counts)
    del indptr, src, dst, etype
    fmax = max([v.shape[1] for v in feats.values()] + [0])
    featureless = [t for t in ntypes if t not in feats]
    if featureless and o.embed_dim <= 0:
        p.error(f"node types {', '.join(featureless)} have no features: give --embed-dim D")
    width = max(fmax, o.embed_dim if featureless else 0, 1)
    x = {t: F.pad(v, (0, width - v.shape[1])) for t, v in feats.items()}
    embs, emb_opt = {}, None
    if featureless:
        bound = 1.0 / np.sqrt(o.embed_dim)
        for t in featureless:
            embs[t] = dgl.nn.NodeEmbedding(
                counts[t], o.embed_dim, f"rows-{t}",
                init_func=lambda a: torch.nn.init.uniform_(a, -bound, bound))
        emb_opt = dgl.optim.SparseAdam(params=list(embs.values()), lr=o.embed_lr or o.lr)
    lo = int(off[tid[target]])
    yt = torch.from_numpy(y[lo:int(off[tid[target] + 1])])
    train = torch.from_numpy(split["train"] - lo)
    test = torch.from_numpy(split["test"] - lo)
    load_s = time.perf_counter() - t0

    def inputs(nodes):
        h = {}
        for t, ids in nodes.items():
            if t in x:
                h[t] = x[t][ids]
            else:
                h[t] = F.pad(embs[t](ids), (0, width - o.embed_dim))
        return h

    classes = int(yt.max()) + 1
    dims = [width] + [o.hidden] * (o.layers - 1) + [classes]
    model = RGCN(rels, dims, o.dropout, o.init)
    opt = torch.optim.Adam(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))
    loader = dgl.dataloading.DataLoader(g, {target: train}, sampler, batch_size=o.batch_size,
                                        shuffle=True, drop_last=False, num_workers=o.workers)
    times, loss_mean, batches, edges = [], 0.0, 0, 0
    for epoch in range(1, o.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        total, count, batches, edges = 0.0, 0, 0, 0
        for in_nodes, seeds, blocks in loader:
            opt.zero_grad()
            if emb_opt:
                emb_opt.zero_grad()  # clears the rows' gradient trace of the last step
            out = model(blocks, inputs(in_nodes))[target]
            loss = F.cross_entropy(out, yt[seeds[target]])
            loss.backward()
            opt.step()
            if emb_opt:
                emb_opt.step()
            n = len(seeds[target])
            total += loss.item() * n
            count += n
            batches += 1
            edges += sum(b.num_edges() for b in blocks)
        times.append(time.perf_counter() - t0)
        loss_mean = total / max(count, 1)
    model.eval()
    full = dgl.dataloading.MultiLayerFullNeighborSampler(o.layers)
    tl = dgl.dataloading.DataLoader(g, {target: test}, full, batch_size=4096, shuffle=False)
    right = 0
    t0 = time.perf_counter()
    with torch.no_grad():
        for in_nodes, seeds, blocks in tl:
            pred = model(blocks, inputs(in_nodes))[target].argmax(1)
            right += int((pred == yt[seeds[target]]).sum())
    test_s = time.perf_counter() - t0
    print(json.dumps({"graph": o.graph, "impl": "dgl", "model": "rgcn", "layers": o.layers,
                      "hidden": o.hidden, "fanouts": o.fanouts, "batch_size": o.batch_size,
                      "epochs": o.epochs, "embed_dim": o.embed_dim, "workers": o.workers,
                      "threads": torch.get_num_threads(), "epoch_s": float(np.mean(times)),
                      "batches": batches, "sampled_edges": edges, "loss": loss_mean,
                      "test_acc": right / max(len(test), 1), "test_s": test_s,
                      "load_s": load_s, "torch": torch.__version__, "dgl": dgl.__version__}))


if __name__ == "__main__":
    main()
