"""DGL reference for gnn-train --task link --mode minibatch: GraphSAGE
trained on edge mini-batches the way DGL's link-prediction examples train
it, with gnn-train's settings, so that the time of an epoch and the test
AUC / AP can be compared one to one.

Each epoch shuffles the training edges (every undirected edge of the
split graph once, as u < v) and cuts them into batches of --batch-size;
dgl.dataloading.as_edge_prediction_sampler wraps a NeighborSampler of
--fanouts (given nearest hop first, as gnn-train's; DGL's list runs from
the input layer, so it gets them reversed), draws --negatives uniform
negatives per positive (negative_sampler.Uniform, corrupting the
destination) and, with exclude="reverse_id", leaves the batch's edges and
their reverses out of the sampled neighbourhoods, as gnn-train does. The
layers are dgl.nn.SAGEConv(aggregator_type="mean") with ReLU between
them; decoder <z_u, z_v>; loss mean softplus(-s_pos) + mean
softplus(s_neg); Adam with L2 weight decay on every parameter. Every
--eval-every epochs all nodes are embedded over the whole graph (no
dropout) and the held-out sets scored; the reported test AUC and AP are
those of the epoch of best validation AUC.

--workers 0 samples in the training loop (gnn-train --prefetch 0); N > 0
in DGL DataLoader worker processes ahead of it.

    $(bench/reference/python.sh dgl) bench/reference/link_minibatch_dgl.py GRAPH.h5
        [--layers L] [--hidden H] [--out-dim D] [--fanouts 10,10] [--batch-size B]
        [--dropout P] [--lr LR] [--weight-decay WD] [--negatives K] [--epochs E]
        [--seed S] [--threads T] [--workers N] [--eval-every N]

Prints one JSON line: test_auc, test_ap, valid_auc, best_epoch,
epoch_s_mean (training time of an epoch, evaluation excluded; the first
epoch left out when there are more, as gnn-train does), batches.
"""
import json
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from link_torch import auc_ap, common_args, load

warnings.filterwarnings("ignore")


class Sage(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        from dgl.nn import SAGEConv
        self.conv = torch.nn.ModuleList(SAGEConv(dims[i], dims[i + 1], "mean")
                                        for i in range(len(dims) - 1))

    def forward(self, graphs, x, p):
        for i, (c, g) in enumerate(zip(self.conv, graphs)):
            x = c(g, F.dropout(x, p, self.training))
            if i < len(self.conv) - 1:
                x = x.relu()
        return x


def main():
    ap = common_args(epochs=50)
    ap.add_argument("--fanouts", default="10,10")
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--workers", type=int, default=0)
    a = ap.parse_args()
    import dgl
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dgl.seed(a.seed)
    n, src, dst, x, sets = load(a.graph)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    # The reverse of every stored edge (the graph holds both directions).
    key = src * n + dst
    order = np.argsort(key, kind="stable")
    rev = order[np.searchsorted(key[order], dst * n + src)]
    if not np.array_equal(key[rev], dst * n + src):
        raise SystemExit("link_minibatch_dgl.py: the graph is not stored in both directions")
    train = torch.from_numpy(np.flatnonzero(src < dst))
    fanouts = [int(f) for f in a.fanouts.split(",")][::-1]
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler(fanouts), exclude="reverse_id",
        reverse_eids=torch.from_numpy(rev),
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(a.negatives))
    loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=a.batch_size, shuffle=True,
                                        drop_last=False, num_workers=a.workers)
    dims = [x.shape[1]] + [a.hidden] * (a.layers - 1) + [a.out_dim]
    model = Sage(dims)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)

    def score(z, e):
        return (z[e[0]] * z[e[1]]).sum(1)

    best, times, batches = (-1.0, None, None, 0), [], 0
    for epoch in range(1, a.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        batches = 0
        for input_nodes, pair, neg, blocks in loader:
            z = model(blocks, x[input_nodes], a.dropout)
            ps = score(z, pair.edges())
            ns = score(z, neg.edges())
            loss = F.softplus(-ps).mean() + F.softplus(ns).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            batches += 1
        times.append(time.perf_counter() - t0)
        if a.eval_every and (epoch % a.eval_every == 0 or epoch == a.epochs):
            model.eval()
            with torch.no_grad():
                z = model([g] * a.layers, x, 0.0)
                m = {k: score(z, e).numpy() for k, e in sets.items()}
            va, _ = auc_ap(m["valid_pos"], m["valid_neg"])
            ta, tp = auc_ap(m["test_pos"], m["test_neg"])
            if va > best[0]:
                best = (va, ta, tp, epoch)
    print(json.dumps({"impl": "dgl-minibatch", "dgl": dgl.__version__, "torch": torch.__version__,
                      "test_auc": best[1], "test_ap": best[2], "valid_auc": best[0],
                      "best_epoch": best[3], "batches": batches,
                      "epoch_s_mean": float(np.mean(times[1:] if len(times) > 1 else times))}))


if __name__ == "__main__":
    main()
