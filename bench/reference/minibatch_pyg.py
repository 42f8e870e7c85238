"""PyTorch Geometric reference for gnn-train's mini-batch training on one
GPU (or the CPU): GraphSAGE on sampled subgraphs the way PyG's own
ogbn-products example trains it, with gnn-train's settings, so that the
time of an epoch and the accuracy after it can be compared one to one.

Each epoch shuffles the training nodes and cuts them into batches of
--batch-size seeds. --sampler pyg (the default where PyG can sample):
torch_geometric.loader.NeighborLoader draws --fanouts in-neighbours per
node and hop (nearest hop first, as gnn-train's --fanouts and PyG's
num_neighbors), uniformly without replacement, in --workers worker
processes ahead of the training loop (PyG's way of overlapping sampling
with compute; 0: in the loop), from the graph and features in host
memory; each batch (its subgraph, feature and label rows) is copied to
the device. PyG samples with pyg-lib or torch-sparse; where neither is
installed, --sampler auto takes --sampler torch instead: the same hops
(a hop samples the nodes the previous one added, new sources relabelled
after the ones already held, every sampled edge kept) drawn by the
vectorised PyTorch sampler of bench/reference/sample_torch.py on the
device itself, from the CSR and features copied there once, so no
batch crosses the bus. The result names the sampler used.

Model: L layers of torch_geometric.nn.SAGEConv (mean aggregation; lin_l
on the mean of the sources with a bias, lin_r on the destination),
ReLU between them, dropout on every layer's input, as gnn-train's sage.
--trim (the default) drops, before each layer, the nodes and edges the
remaining layers do not reach (torch_geometric.utils.trim_to_layer, PyG's
hierarchical sampling), so no layer computes rows no seed needs; --no-trim
runs every layer over the whole subgraph, as the plain example does (and
so does --trim where the loader gives no per-hop counts: torch-sparse's
sampler; the result's trim says which ran).
Adam (torch.optim.Adam, L2 decay on every parameter, gnn-train's default
scope for sage), mean softmax cross-entropy over the batch's seeds.
Weights as PyG draws them (--init pyg: torch.nn.Linear's, uniform in
+-1/sqrt(fan_in), biases too; gnn-train's sage default draws the weights
the same way, its biases zero); --init glorot redraws the weights by
Glorot and zeroes the biases, as gnn-train --init glorot.

After the last epoch (unless --no-eval) the test and validation accuracy
come from layer-wise inference over every node with all in-neighbours (as
gnn-train's mini-batch evaluation): layer l's output for all nodes from
layer l-1's, the mean by one sparse product with the row-normalised
in-edge CSR (torch.sparse.mm), exact, no sampling.

    python3 bench/reference/minibatch_pyg.py GRAPH.h5 [--device cuda|cpu]
        [--layers 3] [--hidden 256] [--fanouts 15,10,5] [--batch-size 1024]
        [--epochs 1] [--dropout 0.5] [--lr 0.01] [--weight-decay 5e-4]
        [--sampler auto|pyg|torch] [--workers N] [--trim|--no-trim]
        [--threads T] [--seed S] [--init pyg|glorot] [--no-eval] [--log-json FILE]

Prints one JSON line: epoch_s (the mean over the epochs, the first kept,
as gnn-train's mini-batch epochs are one each), epoch_end_unix (the wall
clock at the end of the last epoch, to align a GPU utilisation trace
with it), batches, sampled_edges (every sampled edge of the epoch),
input_nodes_mean, loss (the last epoch's mean over its seeds), test_acc
and valid_acc (null with --no-eval), peak_mb (torch's allocator on a
GPU), sampler, versions. Needs torch, torch_geometric, h5py and numpy.
"""
import argparse
import json
import os
import sys
import time
import warnings

import h5py
import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minibatch_dgl  # noqa: E402
from sample_torch import sample_hop  # noqa: E402


def load(path):
    """The in-edge CSR, features, labels (minibatch_dgl.load) and the
    split."""
    with h5py.File(path, "r") as f:
        if "feat" not in f or "label" not in f or "split/train" not in f:
            raise SystemExit(f"minibatch_pyg.py: {path} needs feat, label and split/train")
    n, indptr, indices, x, y, train = minibatch_dgl.load(path)
    with h5py.File(path, "r") as f:
        split = {k: torch.from_numpy(f["split"][k][:].astype(np.int64))
                 for k in ("valid", "test") if k in f["split"]}
    split["train"] = train
    return n, indptr, indices, x, y, split


class Sage(torch.nn.Module):
    def __init__(self, dims, dropout):
        super().__init__()
        from torch_geometric.nn import SAGEConv
        self.dropout = dropout
        self.convs = torch.nn.ModuleList(
            SAGEConv(fin, fout, aggr="mean") for fin, fout in zip(dims[:-1], dims[1:]))

    def forward(self, x, edge_index, nodes_per_hop=None, edges_per_hop=None):
        h = x
        last = len(self.convs) - 1
        for l, conv in enumerate(self.convs):
            if nodes_per_hop is not None:
                from torch_geometric.utils import trim_to_layer
                h, edge_index, _ = trim_to_layer(l, nodes_per_hop, edges_per_hop, h, edge_index)
            h = conv(F.dropout(h, self.dropout, self.training), edge_index)
            if l != last:
                h = F.relu(h)
        return h

    @torch.no_grad()
    def infer(self, x, a_mean):
        """Every node's logits, layer by layer, with all in-neighbours."""
        h = x
        last = len(self.convs) - 1
        for l, conv in enumerate(self.convs):
            h = conv.lin_l(torch.sparse.mm(a_mean, h)) + conv.lin_r(h)
            if l != last:
                h = F.relu(h)
        return h


class TorchSampler:
    """PyG's hops drawn by sample_torch.sample_hop where the CSR lies: hop
    i samples the nodes hop i-1 added (the seeds first), new sources are
    numbered after the nodes already held, every sampled edge is kept
    (source -> destination, local ids), and the per-hop counts are those
    NeighborLoader reports, so trim_to_layer works on either."""

    def __init__(self, indptr, indices, fanouts, gen):
        self.indptr, self.indices, self.fanouts, self.gen = indptr, indices, fanouts, gen

    def __call__(self, seeds):
        dev = seeds.device
        nodes = seeds
        front_lo, front_hi = 0, seeds.numel()
        srcs, dsts = [], []
        nodes_per_hop, edges_per_hop = [seeds.numel()], []
        for fanout in self.fanouts:
            row, src = sample_hop(self.indptr, self.indices, nodes[front_lo:front_hi], fanout,
                                  self.gen)
            known = torch.cat([nodes, src])
            uniq, inverse = torch.unique(known, return_inverse=True)
            first = torch.full((uniq.numel(),), known.numel(), dtype=torch.long, device=dev)
            first.scatter_reduce_(0, inverse, torch.arange(known.numel(), device=dev),
                                  reduce="amin", include_self=True)
            is_new = first >= nodes.numel()
            local = first.clone()
            n_new = int(is_new.sum())
            local[is_new] = nodes.numel() + torch.arange(n_new, device=dev)
            srcs.append(local[inverse[nodes.numel():]])
            dsts.append(row + front_lo)
            front_lo, front_hi = nodes.numel(), nodes.numel() + n_new
            nodes = torch.cat([nodes, uniq[is_new]])
            nodes_per_hop.append(n_new)
            edges_per_hop.append(src.numel())
        edge_index = torch.stack([torch.cat(srcs), torch.cat(dsts)])
        return nodes, edge_index, nodes_per_hop, edges_per_hop


def pyg_can_sample():
    import torch_geometric.typing as t
    return bool(getattr(t, "WITH_PYG_LIB", False) or getattr(t, "WITH_TORCH_SPARSE", False))


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def accuracy(logits, y, idx):
    if idx is None or idx.numel() == 0:
        return None
    return float((logits[idx].argmax(1) == y[idx]).float().mean())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graph")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", default="15,10,5", help="nearest hop first, as gnn-train's")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--sampler", choices=("auto", "pyg", "torch"), default="auto")
    p.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1),
                   help="NeighborLoader worker processes (0: sampling in the loop)")
    p.add_argument("--trim", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-eval", action="store_true")
    p.add_argument("--init", choices=("pyg", "glorot"), default="pyg")
    p.add_argument("--log-json", metavar="FILE")
    o = p.parse_args()
    fanouts = [int(v) for v in o.fanouts.split(",")]
    if len(fanouts) != o.layers:
        p.error(f"--fanouts has {len(fanouts)} entries for {o.layers} layers")
    if o.threads:
        torch.set_num_threads(o.threads)
    dev = torch.device(o.device)
    import torch_geometric
    sampler = o.sampler
    if sampler == "auto":
        sampler = "pyg" if pyg_can_sample() else "torch"
    elif sampler == "pyg" and not pyg_can_sample():
        raise SystemExit("minibatch_pyg.py: --sampler pyg needs pyg-lib or torch-sparse")
    torch.manual_seed(o.seed)

    t0 = time.perf_counter()
    n, indptr, indices, x, y, split = load(o.graph)
    train = split["train"]
    classes = int(y.max()) + 1
    dims = [x.shape[1]] + [o.hidden] * (o.layers - 1) + [classes]
    model = Sage(dims, o.dropout)
    if o.init == "glorot":
        for conv in model.convs:
            torch.nn.init.xavier_uniform_(conv.lin_l.weight)
            torch.nn.init.xavier_uniform_(conv.lin_r.weight)
            torch.nn.init.zeros_(conv.lin_l.bias)
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    if sampler == "pyg":
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader
        dst = torch.repeat_interleave(torch.arange(n), indptr.diff())
        data = Data(x=x, y=y, edge_index=torch.stack([indices, dst]), num_nodes=n)
        loader = NeighborLoader(data, num_neighbors=fanouts, batch_size=o.batch_size,
                                input_nodes=train, shuffle=True, num_workers=o.workers,
                                persistent_workers=o.workers > 0, is_sorted=True,
                                pin_memory=dev.type == "cuda")
        del dst

        def batches():
            for b in loader:
                b = b.to(dev, non_blocking=True)
                # The per-hop counts come with pyg-lib's sampler only
                # (torch-sparse's leaves them out: no trimming then).
                counts = "num_sampled_nodes" in b and "num_sampled_edges" in b
                yield (b.x, b.y[:b.batch_size], b.edge_index,
                       b.num_sampled_nodes if counts else None,
                       b.num_sampled_edges if counts else None)
    else:
        indptr_d, indices_d = indptr.to(dev), indices.to(dev)
        x_d, y_d, train_d = x.to(dev), y.to(dev), train.to(dev)
        gen = torch.Generator(device=dev).manual_seed(o.seed)
        draw = TorchSampler(indptr_d, indices_d, fanouts, gen)

        def batches():
            order = train_d[torch.randperm(train_d.numel(), device=dev, generator=gen)]
            for s in range(0, order.numel(), o.batch_size):
                seeds = order[s:s + o.batch_size]
                nodes, edge_index, nph, eph = draw(seeds)
                yield x_d[nodes], y_d[seeds], edge_index, nph, eph
    sync(dev)
    load_s = time.perf_counter() - t0
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)

    log = open(o.log_json, "w") if o.log_json else None
    times, loss_mean, count_b, edges, inputs = [], 0.0, 0, 0, 0
    end_unix = None
    untrimmed = 0  # batches run over the whole subgraph
    for epoch in range(1, o.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        total = torch.zeros((), device=dev, dtype=torch.float64)
        count, count_b, edges, inputs = 0, 0, 0, 0
        for xb, yb, ei, nph, eph in batches():
            opt.zero_grad(set_to_none=True)
            if o.trim and nph is not None:
                out = model(xb, ei, nph, eph)
            else:
                out = model(xb, ei)
                untrimmed += 1
            out = out[:yb.numel()]
            loss = F.cross_entropy(out, yb)
            loss.backward()
            opt.step()
            total += loss.detach().double() * yb.numel()  # no host wait per batch
            count += yb.numel()
            count_b += 1
            edges += ei.shape[1]
            inputs += xb.shape[0]
        sync(dev)
        epoch_s = time.perf_counter() - t0
        end_unix = time.time()
        times.append(epoch_s)
        loss_mean = float(total) / max(count, 1)
        if log:
            log.write(json.dumps({"epoch": epoch, "loss": loss_mean, "epoch_s": epoch_s,
                                  "epoch_end_unix": end_unix, "batches": count_b,
                                  "sampled_edges": edges}) + "\n")
    peak_mb = torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda" else None
    test_acc = valid_acc = None
    eval_s = 0.0
    if not o.no_eval:
        t0 = time.perf_counter()
        model.eval()
        deg = indptr.diff()
        vals = torch.repeat_interleave(1.0 / deg.clamp(min=1).float(), deg)
        a_mean = torch.sparse_csr_tensor(indptr, indices, vals, (n, n)).to(dev)
        logits = model.infer(x.to(dev), a_mean).cpu()
        test_acc = accuracy(logits, y, split.get("test"))
        valid_acc = accuracy(logits, y, split.get("valid"))
        eval_s = time.perf_counter() - t0
    res = {"graph": o.graph, "impl": "pyg", "sampler": sampler, "trim": o.trim and not untrimmed,
           "device": str(dev), "layers": o.layers, "hidden": o.hidden, "fanouts": o.fanouts,
           "batch_size": o.batch_size, "epochs": o.epochs,
           "workers": o.workers if sampler == "pyg" else 0,
           "threads": torch.get_num_threads(), "epoch_s": float(np.mean(times)) if times else 0.0,
           "epoch_end_unix": end_unix, "batches": count_b, "sampled_edges": edges,
           "input_nodes_mean": inputs / max(count_b, 1), "loss": loss_mean,
           "test_acc": test_acc, "valid_acc": valid_acc, "eval_s": eval_s, "load_s": load_s,
           "peak_mb": peak_mb, "torch": torch.__version__, "pyg": torch_geometric.__version__}
    if log:
        log.write(json.dumps(dict({"final": True}, **res)) + "\n")
        log.close()
    print(json.dumps(res))


if __name__ == "__main__":
    main()
