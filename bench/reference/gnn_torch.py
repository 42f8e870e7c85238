"""PyTorch reference for gnn-train: GCN, GraphSAGE and GAT trained full-graph
on a graph file written by gnn-dataset, with the definitions of
trainer/model.h and the loop of trainer/train.c, so that accuracy and
per-epoch time can be compared one to one.

Layer l maps its input H (n x fin) to Z (n x fout), D = dropout(H) while
training (inverted dropout, on every layer's input, the features too):
    gcn   Z = A_gcn D W + b     A_gcn = D_in^-1/2 (A + I) D_out^-1/2, the
                                degrees counting A's entries plus one; the
                                product is taken in the cheaper order
                                (A (D W) when fout < fin, else (A D) W)
    sage  Z = D W_self + mean(D) W_neigh + b
                                mean over the in-neighbours (rows of the
                                in-edge CSR); 0 for a node without any;
                                mean(D) W_neigh in the cheaper order too
    gat   per head h of K (--heads; --out-heads for the last layer),
          Wh = D W (F features per head: --hidden, the class count last),
          s[u -> v, h] = LeakyReLU(<a_l[h], Wh[u, h]> + <a_r[h], Wh[v, h]>)
                                with slope --negative-slope, over the
                                edges with stored self loops left out and
                                one self loop per node added,
          alpha = softmax of s over each destination's in-edges, dropped
                                with probability --attn-dropout while
                                training (inverted dropout),
          y[v, h] = sum_u alpha[u -> v, h] Wh[u, h]
                                Z = the K heads of y concatenated + b in a
                                hidden layer, their mean + b in the last
and H' = ReLU(Z) (gcn, sage) or ELU(Z) (gat) except after the last layer,
whose Z are the logits. Edge weights in the file are ignored (the degrees
count entries). Weights (W, a_l, a_r) are Glorot-uniform, except sage's W
and W_self, uniform in +-1/sqrt(fin) (torch.nn.Linear's bound, as
gnn-train's --init fan-in, its sage default; --init chooses), biases zero. Adam (torch.optim.Adam, L2 weight
decay added to the gradient) with the decay on the first layer's
parameters only (--decay-scope first, the gcn default, as in the GCN
paper) or on all of them (all, the sage and gat default). Loss: mean softmax
cross-entropy over the training nodes. Every --eval-every epochs a forward
without dropout gives the accuracies and the validation loss; the reported
test accuracy is the one at the epoch of best validation accuracy (ties:
lower validation loss).

Aggregation is torch.sparse.mm on CSR tensors. Backward needs A^T X; by
default a custom autograd function multiplies by a CSR of A^T built once
(what graph libraries do with a cached transpose); --spmm autograd leaves
it to torch's own autograd of torch.sparse.mm instead. GAT runs on the
edge list (sources and destinations, self loops as above, sorted by
destination): scores gathered per edge, the softmax's maximum by
index_reduce_ ("amax") and its sum by index_add; the sum of the weighted
sources is, with --spmm cached, one torch.sparse.mm per head on a CSR
holding that head's attention weights, in a custom autograd function
whose backward multiplies by the CSR by source (built once) and gathers
the weights' gradient per head; with --spmm autograd, index_add of the
messages (an edges x heads x F tensor) left to torch's autograd, which
keeps that tensor for the backward and makes another there.

--impl pyg trains the same configuration with PyTorch Geometric's own
layers instead (torch_geometric.nn.GCNConv with cached=True, SAGEConv with
mean aggregation), as its full-graph examples do: the layer definitions,
initialisation and product order are PyG's (GCNConv normalises by the
in-degree plus one on both sides, which equals the above on symmetric
graphs; it multiplies by W before aggregating; SAGEConv aggregates before
its linear maps; GATConv with heads, concat=True in hidden layers and
concat=False (mean over heads) in the last, add_self_loops=True, dropout
= --attn-dropout and negative_slope; it removes stored self loops and
adds one per node at every forward), the loop, optimiser, evaluation and
timing are this file's. --adj edge_index hands PyG the graph as an edge list (its
gather-scatter message passing, the usual way), --adj csr as the in-edge
CSR (adj_t) as a torch.sparse tensor (sparse products). GATConv always
gets edge_index: it has no sparse-product path, so on a CSR it would turn
the matrix back into edges, add the self loops and rebuild a matrix at
every forward before the same gather-scatter. --impl dgl does the same
with DGL's layers (dgl.nn.GraphConv with norm="both" on the graph with a
self loop added to every node, which is A_gcn above, in the cheaper
product order; SAGEConv with mean aggregation; GATConv with attn_drop =
--attn-dropout and negative_slope on the graph with its self loops removed
and one per node added, heads flattened in hidden layers and averaged in
the last, ELU between; its initialisation is DGL's, Glorot-normal with
ReLU's gain, and its bias is added per head before the average) on a
DGLGraph of the edges.
PyG and DGL are imported from the interpreter's packages
(bench/reference/python.sh installs them).

Timing: epoch_s is the wall time of one training step (zero_grad, forward,
loss, backward, Adam), evaluation excluded; epoch_s_mean averages it over
all epochs but the first of each run (warm-up). --device cuda trains on the
GPU (the graph, features and model moved there after loading; the step is
timed up to a torch.cuda.synchronize) and reports the peak of
torch.cuda.max_memory_allocated as gpu_peak_mb.

    $(bench/reference/python.sh) bench/reference/gnn_torch.py GRAPH.h5
        [--model gcn|sage|gat] [--heads K] [--out-heads K] [--attn-dropout P]
        [--negative-slope S]
        [--layers L] [--hidden H] [--dropout P] [--lr LR] [--weight-decay WD]
        [--init glorot|fan-in] [--decay-scope first|all] [--epochs E] [--runs N] [--seed S]
        [--threads T] [--normalize-features] [--eval-every K]
        [--spmm cached|autograd] [--impl torch|pyg|dgl]
        [--adj edge_index|csr] [--device cpu|cuda|cuda:N] [--log-json FILE]

Prints one JSON line; --log-json FILE writes one JSON line per epoch and a
final line with the keys gnn-train's --log-json uses. Needs torch, h5py
and numpy (plus torch_geometric or dgl for --impl pyg / dgl): run it with
the interpreter bench/reference/python.sh prints.
"""
import argparse
import json
import math
import time
import warnings

import h5py
import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")


# ---- Graph --------------------------------------------------------------------

def load(path, normalize):
    """The graph file: in-edge CSR (row v lists the sources u of u -> v),
    features, labels, splits."""
    with h5py.File(path, "r") as f:
        n = int(f.attrs["num_nodes"])
        indptr = f["indptr"][:].astype(np.int64)
        indices = f["indices"][:].astype(np.int64)
        x = torch.from_numpy(f["feat"][:].astype(np.float32, copy=False))
        y = torch.from_numpy(f["label"][:].astype(np.int64))
        split = {k: torch.from_numpy(f["split"][k][:].astype(np.int64))
                 for k in ("train", "valid", "test")}
    if normalize:
        s = x.sum(1, keepdim=True)
        x = x / torch.where(s == 0, torch.ones_like(s), s)
    return n, indptr, indices, x, y, split


def csr(indptr, indices, values, n_rows, n_cols):
    return torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices),
                                   torch.from_numpy(values), (n_rows, n_cols))


def transpose(n, indptr, indices, values):
    """CSR of the transpose of the n x n CSR (indptr, indices, values)."""
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    order = np.argsort(indices, kind="stable")
    tptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(indices, minlength=n), out=tptr[1:])
    return tptr, rows[order], values[order]


def canonical(n, rows, cols, vals):
    """Sorted, duplicate-free CSR arrays of the n x n COO (rows, cols, vals),
    repeated entries summed (torch's CSR wants distinct sorted columns)."""
    key, inv = np.unique(rows * n + cols, return_inverse=True)
    val = np.bincount(inv, weights=vals, minlength=len(key)).astype(np.float32)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(key // n, minlength=n), out=ptr[1:])
    return ptr, key % n, val


def gcn_operator(n, indptr, indices, tidy):
    """A_gcn = D_in^-1/2 (A + I) D_out^-1/2 as CSR arrays. The I is added
    even where A already stores a self loop (that entry's weight doubles).
    tidy: the rows are sorted and free of repeats, so the diagonal can be
    inserted in place instead of sorting every entry."""
    deg = np.diff(indptr)
    s_dst = (1.0 / np.sqrt(deg + 1.0)).astype(np.float32)
    s_src = (1.0 / np.sqrt(np.bincount(indices, minlength=n) + 1.0)).astype(np.float32)
    rows = np.repeat(np.arange(n, dtype=np.int64), deg)
    val = s_dst[rows] * s_src[indices]
    if not tidy:
        diag = np.arange(n, dtype=np.int64)
        return canonical(n, np.concatenate([rows, diag]), np.concatenate([indices, diag]),
                         np.concatenate([val, s_dst * s_src]))
    loop = indices == rows
    val[loop] *= 2.0
    ins = np.ones(n, dtype=bool)
    ins[rows[loop]] = False
    before = np.bincount(rows, weights=indices < rows, minlength=n).astype(np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg + ins, out=ptr[1:])
    idx = np.empty(ptr[-1], dtype=np.int64)
    out = np.empty(ptr[-1], dtype=np.float32)
    pos = np.arange(len(indices), dtype=np.int64)
    pos += (ptr[:-1] - indptr[:-1])[rows]
    pos += ins[rows] & (indices > rows)
    idx[pos] = indices
    out[pos] = val
    del pos, rows, val
    v = np.flatnonzero(ins)
    at = ptr[v] + before[v]
    idx[at] = v
    out[at] = s_dst[v] * s_src[v]
    return ptr, idx, out


def mean_operator(n, indptr, indices, tidy):
    """Row v averages its entries (repeats count, as in the trainer)."""
    deg = np.diff(indptr)
    inv = np.where(deg > 0, 1.0 / np.maximum(deg, 1), 0.0).astype(np.float32)
    val = np.repeat(inv, deg)
    if not tidy:
        return canonical(n, np.repeat(np.arange(n, dtype=np.int64), deg), indices, val)
    return indptr, indices, val


class SpMM(torch.autograd.Function):
    """Y = A X with dX = A^T dY, both by torch.sparse.mm on CSR tensors."""

    @staticmethod
    def forward(ctx, a, at, x):
        ctx.at = at
        return torch.sparse.mm(a, x)

    @staticmethod
    def backward(ctx, dy):
        return None, None, torch.sparse.mm(ctx.at, dy)


class Operator:
    """A sparse n x n operator and (unless symmetric or using autograd) its
    transpose."""

    def __init__(self, n, indptr, indices, values, symmetric, mode):
        self.mode = mode
        self.a = csr(indptr, indices, values, n, n)
        if mode == "cached":
            self.at = self.a if symmetric else csr(*transpose(n, indptr, indices, values), n, n)

    def to(self, dev):
        same = self.mode == "cached" and self.at is self.a
        self.a = self.a.to(dev)
        if self.mode == "cached":
            self.at = self.a if same else self.at.to(dev)
        return self

    def __call__(self, x):
        if self.mode == "cached":
            return SpMM.apply(self.a, self.at, x)
        return torch.sparse.mm(self.a, x)


def offsets(rows, n):
    """CSR row offsets (n + 1) of entries in the sorted rows."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr


class Edges:
    """GAT's graph: the edges u -> v of the in-edge CSR, stored self loops
    left out and one self loop per node added, sorted by destination then
    source, as index tensors src and dst; the same edges as a CSR by
    destination (ptr, src) and by source (tptr, tdst), perm giving the edge
    at each slot of the latter: matrices of per-edge values for
    AttnSum."""

    def __init__(self, n, indptr, indices):
        dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        keep = indices != dst
        loop = np.arange(n, dtype=np.int64)
        src = np.concatenate([indices[keep], loop])
        dst = np.concatenate([dst[keep], loop])
        del keep
        order = np.argsort(dst * n + src, kind="stable")
        src, dst = src[order], dst[order]
        perm = np.argsort(src * n + dst, kind="stable")
        del order
        self.n = n
        self.ptr = torch.from_numpy(offsets(dst, n))
        self.tptr = torch.from_numpy(offsets(src, n))
        self.tdst = torch.from_numpy(dst[perm])
        self.perm = torch.from_numpy(perm)
        self.src, self.dst = torch.from_numpy(src), torch.from_numpy(dst)

    def to(self, dev):
        for k in ("ptr", "tptr", "tdst", "perm", "src", "dst"):
            setattr(self, k, getattr(self, k).to(dev))
        return self

    def matrix(self, values):
        """n x n CSR: entry (v, u) holds values[e] for edge e = u -> v."""
        return torch.sparse_csr_tensor(self.ptr, self.src, values, (self.n, self.n))

    def matrix_t(self, values):
        """Its transpose: entry (u, v) holds values[e] for edge e = u -> v."""
        return torch.sparse_csr_tensor(self.tptr, self.tdst, values[self.perm], (self.n, self.n))


class AttnSum(torch.autograd.Function):
    """y[v, h] = sum over the edges e = u -> v of alpha[e, h] Wh[u, h]
    (alpha: edges x K, Wh: n x K x F), one CSR product per head. Backward:
    dWh[., h] = A_h^T dy[., h] on the CSR by source, dalpha[e, h] =
    <dy[v, h], Wh[u, h]> gathered per head, so that no edges x K x F
    tensor is ever held."""

    @staticmethod
    def forward(ctx, alpha, wh, g):
        ctx.g = g
        ctx.save_for_backward(alpha, wh)
        return torch.stack([torch.sparse.mm(g.matrix(alpha[:, h]), wh[:, h])
                            for h in range(wh.shape[1])], 1)

    @staticmethod
    def backward(ctx, dy):
        alpha, wh = ctx.saved_tensors
        g = ctx.g
        k = wh.shape[1]
        dalpha = torch.stack([(dy[g.dst, h] * wh[g.src, h]).sum(-1) for h in range(k)], 1)
        dwh = torch.stack([torch.sparse.mm(g.matrix_t(alpha[:, h]), dy[:, h].contiguous())
                           for h in range(k)], 1)
        return dalpha, dwh, None


def gat_heads(o, layers):
    """Heads of each layer: --heads in the hidden ones, --out-heads last."""
    return [o.heads] * (layers - 1) + [o.out_heads]


def gat_fin(dims, heads, l):
    """Input width of GAT layer l: the features, or the previous layer's
    heads concatenated."""
    return dims[0] if l == 0 else heads[l - 1] * dims[l]


# ---- Model --------------------------------------------------------------------

class Net(torch.nn.Module):
    def __init__(self, kind, dims, dropout, init=None):
        super().__init__()
        self.kind, self.dims, self.dropout = kind, dims, dropout
        self.w = torch.nn.ParameterList()
        self.w_self = torch.nn.ParameterList()
        self.b = torch.nn.ParameterList()
        for fin, fout in zip(dims[:-1], dims[1:]):
            self.w.append(torch.nn.Parameter(torch.empty(fin, fout)))
            if kind == "sage":
                self.w_self.append(torch.nn.Parameter(torch.empty(fin, fout)))
            self.b.append(torch.nn.Parameter(torch.zeros(fout)))
        if init is None:  # gnn-train's defaults
            init = "fan-in" if kind == "sage" else "glorot"
        for p in list(self.w) + list(self.w_self):
            if init == "fan-in":  # torch.nn.Linear's bound, 1/sqrt(fan_in)
                torch.nn.init.uniform_(p, -1.0 / math.sqrt(p.shape[0]), 1.0 / math.sqrt(p.shape[0]))
            else:
                torch.nn.init.xavier_uniform_(p)

    def layer_params(self, l):
        ps = [self.w[l], self.b[l]]
        if self.kind == "sage":
            ps.insert(1, self.w_self[l])
        return ps

    def forward(self, op, x):
        h = x
        last = len(self.dims) - 2
        for l in range(last + 1):
            d = F.dropout(h, self.dropout, self.training)
            fin, fout = self.dims[l], self.dims[l + 1]
            if self.kind == "gcn":
                z = op(d @ self.w[l]) if fout < fin else op(d) @ self.w[l]
            else:
                # the mean is linear: its product in the cheaper order, as gcn's
                nb = op(d @ self.w[l]) if fout < fin else op(d) @ self.w[l]
                z = torch.addmm(nb, d, self.w_self[l])
            z = z + self.b[l]
            h = z if l == last else F.relu(z)
        return h


class GatNet(torch.nn.Module):
    """GAT as defined above, on Edges; hidden layers concatenate their
    heads and apply ELU, the last averages its heads."""

    def __init__(self, dims, o):
        super().__init__()
        self.dropout, self.attn_dropout, self.slope = o.dropout, o.attn_dropout, o.negative_slope
        self.spmm = o.spmm
        self.heads = gat_heads(o, len(dims) - 1)
        self.w = torch.nn.ParameterList()
        self.a_l = torch.nn.ParameterList()
        self.a_r = torch.nn.ParameterList()
        self.b = torch.nn.ParameterList()
        for l, (f, k) in enumerate(zip(dims[1:], self.heads)):
            last = l == len(self.heads) - 1
            self.w.append(torch.nn.Parameter(torch.empty(gat_fin(dims, self.heads, l), k * f)))
            self.a_l.append(torch.nn.Parameter(torch.empty(k, f)))
            self.a_r.append(torch.nn.Parameter(torch.empty(k, f)))
            self.b.append(torch.nn.Parameter(torch.zeros(f if last else k * f)))
        for p in list(self.w) + list(self.a_l) + list(self.a_r):
            torch.nn.init.xavier_uniform_(p)

    def layer_params(self, l):
        return [self.w[l], self.a_l[l], self.a_r[l], self.b[l]]

    def layer(self, g, l, d):
        k = self.heads[l]
        wh = (d @ self.w[l]).view(g.n, k, -1)
        el = (wh * self.a_l[l]).sum(-1)
        er = (wh * self.a_r[l]).sum(-1)
        s = F.leaky_relu(el[g.src] + er[g.dst], self.slope)
        with torch.no_grad():
            top = s.new_full((g.n, k), -math.inf).index_reduce_(0, g.dst, s, "amax")
        e = torch.exp(s - top[g.dst])
        total = torch.zeros_like(top).index_add(0, g.dst, e)
        alpha = F.dropout(e / total[g.dst], self.attn_dropout, self.training)
        if self.spmm == "cached":
            y = AttnSum.apply(alpha, wh, g)
        else:
            y = torch.zeros_like(wh).index_add(0, g.dst, alpha.unsqueeze(-1) * wh[g.src])
        last = l == len(self.heads) - 1
        return (y.mean(1) if last else y.flatten(1)) + self.b[l]

    def forward(self, g, x):
        h = x
        last = len(self.heads) - 1
        for l in range(last + 1):
            z = self.layer(g, l, F.dropout(h, self.dropout, self.training))
            h = z if l == last else F.elu(z)
        return h


class PygNet(torch.nn.Module):
    """The same configuration built from PyTorch Geometric's layers; op is
    the graph as PyG takes it (edge_index or adj_t)."""

    def __init__(self, kind, dims, dropout):
        super().__init__()
        from torch_geometric.nn import GCNConv, SAGEConv
        self.kind, self.dropout = kind, dropout
        self.convs = torch.nn.ModuleList(
            GCNConv(fin, fout, cached=True) if kind == "gcn" else SAGEConv(fin, fout, aggr="mean")
            for fin, fout in zip(dims[:-1], dims[1:]))

    def layer_params(self, l):
        return list(self.convs[l].parameters())

    def forward(self, op, x):
        h = x
        last = len(self.convs) - 1
        for l, conv in enumerate(self.convs):
            z = conv(F.dropout(h, self.dropout, self.training), op)
            h = z if l == last else F.relu(z)
        return h


class PygGatNet(PygNet):
    """GAT from PyG's GATConv; op is edge_index."""

    def __init__(self, dims, o):
        torch.nn.Module.__init__(self)
        from torch_geometric.nn import GATConv
        self.dropout = o.dropout
        heads = gat_heads(o, len(dims) - 1)
        self.convs = torch.nn.ModuleList(
            GATConv(gat_fin(dims, heads, l), f, heads=k, concat=l < len(heads) - 1,
                    negative_slope=o.negative_slope, dropout=o.attn_dropout,
                    add_self_loops=True)
            for l, (f, k) in enumerate(zip(dims[1:], heads)))

    def forward(self, op, x):
        h = x
        last = len(self.convs) - 1
        for l, conv in enumerate(self.convs):
            z = conv(F.dropout(h, self.dropout, self.training), op)
            h = z if l == last else F.elu(z)
        return h


class DglNet(PygNet):
    """The same configuration built from DGL's layers; op is the DGLGraph."""

    def __init__(self, kind, dims, dropout):
        torch.nn.Module.__init__(self)
        from dgl.nn import GraphConv, SAGEConv
        self.kind, self.dropout = kind, dropout
        self.convs = torch.nn.ModuleList(
            GraphConv(fin, fout, norm="both") if kind == "gcn" else SAGEConv(fin, fout, "mean")
            for fin, fout in zip(dims[:-1], dims[1:]))

    def forward(self, op, x):
        h = x
        last = len(self.convs) - 1
        for l, conv in enumerate(self.convs):
            z = conv(op, F.dropout(h, self.dropout, self.training))
            h = z if l == last else F.relu(z)
        return h


class DglGatNet(PygNet):
    """GAT from DGL's GATConv; op is the DGLGraph with one self loop per
    node."""

    def __init__(self, dims, o):
        torch.nn.Module.__init__(self)
        from dgl.nn import GATConv
        self.dropout = o.dropout
        heads = gat_heads(o, len(dims) - 1)
        self.convs = torch.nn.ModuleList(
            GATConv(gat_fin(dims, heads, l), f, k, attn_drop=o.attn_dropout,
                    negative_slope=o.negative_slope)
            for l, (f, k) in enumerate(zip(dims[1:], heads)))

    def forward(self, op, x):
        h = x
        last = len(self.convs) - 1
        for l, conv in enumerate(self.convs):
            z = conv(op, F.dropout(h, self.dropout, self.training))
            h = z.mean(1) if l == last else F.elu(z.flatten(1))
        return h


def dgl_graph(n, indptr, indices, kind):
    """The in-edge CSR as a DGLGraph (edges source -> target), with a self
    loop on every node for GCN, and for GAT in place of the stored ones;
    its sparse formats built before timing."""
    import dgl
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    g = dgl.graph((torch.from_numpy(indices), torch.from_numpy(dst)), num_nodes=n)
    if kind == "gat":
        g = dgl.remove_self_loop(g)
    if kind in ("gcn", "gat"):
        g = dgl.add_self_loop(g)
    g.create_formats_()
    return g


def pyg_graph(n, indptr, indices, adj):
    """The in-edge CSR as PyG takes it: edge_index [sources; targets] or the
    CSR itself as adj_t (row v = target v), unit weights."""
    if adj == "csr":
        return csr(indptr, indices, np.ones(len(indices), dtype=np.float32), n, n)
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    return torch.from_numpy(np.stack([indices, dst]))


# ---- Training -----------------------------------------------------------------

def evaluate(model, op, x, y, split):
    model.eval()
    with torch.no_grad():
        out = model(op, x)
        pred = out.argmax(1)
        acc = {k: (pred[v] == y[v]).float().mean().item() if len(v) else 0.0
               for k, v in split.items()}
        vloss = F.cross_entropy(out[split["valid"]], y[split["valid"]]).item() \
            if len(split["valid"]) else 0.0
    return acc, vloss


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def run(o, r, op, x, y, split, log, dev):
    torch.manual_seed(o.seed + r)
    classes = int(y.max()) + 1
    dims = [x.shape[1]] + [o.hidden] * (o.layers - 1) + [classes]
    if o.model == "gat":
        model = {"torch": GatNet, "pyg": PygGatNet, "dgl": DglGatNet}[o.impl](dims, o)
    else:
        model = (Net(o.model, dims, o.dropout, o.init) if o.impl == "torch" else
                 {"pyg": PygNet, "dgl": DglNet}[o.impl](o.model, dims, o.dropout))
    model = model.to(dev)
    first = model.layer_params(0)
    rest = [p for l in range(1, o.layers) for p in model.layer_params(l)]
    scope_wd = o.weight_decay if o.decay_scope == "all" else 0.0
    groups = [{"params": first, "weight_decay": o.weight_decay}]
    if rest:
        groups.append({"params": rest, "weight_decay": scope_wd})
    opt = torch.optim.Adam(groups, lr=o.lr)
    train = split["train"]
    y_train = y[train]
    best = {"valid_acc": -1.0, "valid_loss": math.inf, "test_acc": 0.0, "epoch": -1}
    times, eval_times = [], []
    acc, vloss = {"train": 0.0, "valid": 0.0, "test": 0.0}, 0.0
    for epoch in range(1, o.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(op, x)
        loss = F.cross_entropy(out[train], y_train)
        loss.backward()
        opt.step()
        sync(dev)
        epoch_s = time.perf_counter() - t0
        times.append(epoch_s)
        evaluated = epoch % o.eval_every == 0 or epoch == o.epochs
        eval_s = 0.0
        if evaluated:
            t1 = time.perf_counter()
            acc, vloss = evaluate(model, op, x, y, split)
            eval_s = time.perf_counter() - t1
            eval_times.append(eval_s)
            va = acc["valid"]
            if va > best["valid_acc"] or (va == best["valid_acc"] and vloss < best["valid_loss"]):
                best = {"valid_acc": va, "valid_loss": vloss, "test_acc": acc["test"],
                        "epoch": epoch}
        if log:
            log.write(json.dumps({"run": r, "epoch": epoch, "loss": loss.item(),
                                  "train_acc": acc["train"], "valid_acc": acc["valid"],
                                  "test_acc": acc["test"], "valid_loss": vloss,
                                  "evaluated": evaluated, "epoch_s": epoch_s,
                                  "eval_s": eval_s}) + "\n")
            log.flush()
    return best, times, eval_times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graph")
    p.add_argument("--model", choices=("gcn", "sage", "gat"), default="gcn")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=16,
                   help="width of the hidden layers (gat: of each head)")
    p.add_argument("--heads", type=int, default=8, help="gat: heads of each hidden layer")
    p.add_argument("--out-heads", type=int, default=1, help="gat: heads of the output layer")
    p.add_argument("--attn-dropout", type=float, default=0.6,
                   help="gat: drop probability of each attention weight")
    p.add_argument("--negative-slope", type=float, default=0.2,
                   help="gat: slope of the score's LeakyReLU below 0")
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--init", choices=("glorot", "fan-in"), default=None,
                   help="--impl torch's weights, as gnn-train's --init (default: fan-in for "
                        "sage, glorot for gcn)")
    p.add_argument("--decay-scope", choices=("first", "all"), default=None,
                   help="first (gcn default) or all (sage and gat default)")
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--normalize-features", action="store_true",
                   help="divide each feature row by its sum")
    p.add_argument("--eval-every", type=int, default=1)
    p.add_argument("--spmm", choices=("cached", "autograd"), default="cached")
    p.add_argument("--impl", choices=("torch", "pyg", "dgl"), default="torch",
                   help="torch: this file's layers; pyg: PyTorch Geometric's; dgl: DGL's")
    p.add_argument("--adj", choices=("edge_index", "csr"), default="edge_index",
                   help="how --impl pyg gets the graph (gat: always edge_index)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--log-json", metavar="FILE")
    o = p.parse_args()
    if o.layers < 1 or o.epochs < 1 or o.runs < 1 or o.eval_every < 1:
        p.error("--layers, --epochs, --runs and --eval-every must be >= 1")
    if o.heads < 1 or o.out_heads < 1:
        p.error("--heads and --out-heads must be >= 1")
    if o.model == "gat" and o.impl == "pyg":
        o.adj = "edge_index"
    if o.decay_scope is None:
        o.decay_scope = "first" if o.model == "gcn" else "all"
    if o.threads:
        torch.set_num_threads(o.threads)
    try:
        dev = torch.device(o.device)
    except RuntimeError as e:
        p.error(f"--device {o.device}: {e}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        p.error(f"--device {o.device}: this torch sees no CUDA device")

    t0 = time.perf_counter()
    n, indptr, indices, x, y, split = load(o.graph, o.normalize_features)
    with h5py.File(o.graph, "r") as f:
        symmetric = bool(f.attrs.get("symmetric", 0))
        tidy = bool(f.attrs.get("sorted", 0)) and bool(f.attrs.get("deduplicated", 0))
    if o.impl == "pyg":
        import torch_geometric
        op = pyg_graph(n, indptr, indices, o.adj)
        del indptr, indices
    elif o.impl == "dgl":
        import dgl
        op = dgl_graph(n, indptr, indices, o.model)
        del indptr, indices
    elif o.model == "gat":
        op = Edges(n, indptr, indices)
        del indptr, indices
    elif o.model == "gcn":
        arrays, sym = gcn_operator(n, indptr, indices, tidy), symmetric
    else:
        arrays, sym = mean_operator(n, indptr, indices, tidy), False
    if o.impl == "torch" and o.model != "gat":
        del indptr, indices
        op = Operator(n, *arrays, sym, o.spmm)
        del arrays
    if dev.type != "cpu":
        op, x, y = op.to(dev), x.to(dev), y.to(dev)
        split = {k: v.to(dev) for k, v in split.items()}
        sync(dev)
    load_s = time.perf_counter() - t0

    log = open(o.log_json, "w") if o.log_json else None
    tests, vals, epochs, warm, first, evals = [], [], [], [], [], []
    for r in range(o.runs):
        best, times, eval_times = run(o, r, op, x, y, split, log, dev)
        tests.append(best["test_acc"])
        vals.append(best["valid_acc"])
        epochs.append(best["epoch"])
        first.append(times[0])
        warm.extend(times[1:] if len(times) > 1 else times)
        evals.extend(eval_times)
    res = {"graph": o.graph, "model": o.model, "layers": o.layers, "hidden": o.hidden,
           "runs": o.runs, "epochs": o.epochs, "threads": torch.get_num_threads(),
           "spmm": {"torch": o.spmm, "pyg": o.adj, "dgl": "dgl"}[o.impl], "impl": o.impl,
           "test_acc": tests[-1], "valid_acc": vals[-1],
           "best_epoch": epochs[-1], "test_acc_mean": float(np.mean(tests)),
           "test_acc_std": float(np.std(tests)), "valid_acc_mean": float(np.mean(vals)),
           "run_test_acc": tests, "epoch_s_mean": float(np.mean(warm)),
           "epoch_s_first": float(np.mean(first)), "eval_s_mean": float(np.mean(evals)),
           "load_s": load_s, "torch": torch.__version__, "device": str(dev)}
    if dev.type == "cuda":
        res["gpu"] = torch.cuda.get_device_name(dev)
        res["gpu_peak_mb"] = torch.cuda.max_memory_allocated(dev) / 2**20
    if o.impl == "pyg":
        res["pyg"] = torch_geometric.__version__
    if o.impl == "dgl":
        res["dgl"] = dgl.__version__
    res["epoch_s"] = res["epoch_s_mean"]
    if log:
        log.write(json.dumps(dict({"final": True}, **res)) + "\n")
        log.close()
    print(json.dumps(res))


if __name__ == "__main__":
    main()
