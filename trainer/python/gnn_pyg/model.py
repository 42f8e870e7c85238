"""The PyG model of a gnn-train --save-model file.

The file's metadata (docs/FORMAT.md, "Model file") gives the architecture;
its tensors are named as the PyG layers built here name theirs, so the
state dict loads as it is (strict). The model computes what gnn-train
computes:

  gcn   GCNConv layers, ReLU between. gnn-train normalises with
        D_in^-1/2 (A + I) D_out^-1/2 (stored-edge counts, a self loop added
        to every node, edge weights not read); that is GCNConv's own
        normalisation on a symmetric graph without self loops, and the
        model passes exactly these weights to GCNConv(normalize=False), so
        it agrees on directed graphs and with self loops too.
  sage  SAGEConv (lin_l on the aggregated neighbours, with the bias; lin_r
        on the node itself), aggregator mean, sum or max; ReLU between.
        Where gnn-train weighed sum and mean by the stored edge weights
        (metadata edge_weights "multiply": a weighted graph, trained on
        the whole graph or over ranks), each message is multiplied by its
        edge's weight, and edge_weight must be passed.
  gat   GATConv, hidden layers' heads concatenated, the output layer's
        averaged; ELU between; self loops replaced by one per node.
  rgcn  RGCNConv (aggr "mean": the mean of each relation's in-neighbours,
        summed over relations), edge_type from the graph file; PyG's
        segment_matmul path, which averages over all in-edges at once, is
        kept off.

Input: the node features (row-normalised when the model was trained with
--normalize-features), and with --embed-dim the learnable rows (the
`embedding` table, one row per node by graph-file id). Dropout is off in
eval() as in gnn-train's predictions.
"""
import json

import torch
import torch.nn.functional as F
from torch import nn

from .safetensors import read_safetensors

_AGGR = {"mean": "mean", "sum": "sum", "max": "max"}


def _int(meta, key, default=None):
    v = meta.get(key)
    if v is None:
        if default is None:
            raise ValueError(f"model metadata lacks {key}")
        return default
    return int(v)


def _weighted_sage(*args, **kwargs):
    """A SAGEConv whose messages are multiplied by their edge's weight
    (forward(x, edge_index, edge_weight)); its tensors are SAGEConv's."""
    from torch_geometric.nn import SAGEConv

    class WeightedSAGEConv(SAGEConv):
        def forward(self, x, edge_index, edge_weight=None):
            self._edge_weight = edge_weight
            try:
                return super().forward(x, edge_index)
            finally:
                self._edge_weight = None

        def message(self, x_j):
            w = getattr(self, "_edge_weight", None)
            return x_j if w is None else x_j * w.view(-1, 1).to(x_j.dtype)

    return WeightedSAGEConv(*args, **kwargs)


def _gcn_weights(edge_index, n):
    """gnn-train's GCN normalisation as explicit weights, self loops appended."""
    src, dst = edge_index
    ones = torch.ones(src.numel(), dtype=torch.float32, device=src.device)
    deg_out = torch.zeros(n, dtype=torch.float32, device=src.device).index_add_(0, src, ones)
    deg_in = torch.zeros(n, dtype=torch.float32, device=src.device).index_add_(0, dst, ones)
    s_out = (deg_out.double() + 1.0).rsqrt().float()
    s_in = (deg_in.double() + 1.0).rsqrt().float()
    w = s_out[src] * s_in[dst]
    loop = torch.arange(n, device=src.device)
    ei = torch.cat([edge_index, torch.stack([loop, loop])], dim=1)
    return ei, torch.cat([w, s_out * s_in])


def _rgcn_per_relation(conv, x, edge_index, edge_type):
    """conv(x, edge_index, edge_type) with PyG's segment_matmul path off: that
    path (taken for large graphs when pyg-lib is installed) averages over
    all in-edges together, not per relation as R-GCN (and gnn-train) does."""
    import torch_geometric.backend as backend

    keep = backend.use_segment_matmul
    backend.use_segment_matmul = False
    try:
        return conv(x, edge_index, edge_type)
    finally:
        backend.use_segment_matmul = keep


class MLPDecoder(nn.Module):
    """Link prediction's MLP decoder: lin2(ReLU(lin1(z_u * z_v)))."""

    def __init__(self, dim):
        super().__init__()
        self.lin1 = nn.Linear(dim, dim)
        self.lin2 = nn.Linear(dim, 1)

    def forward(self, zu, zv):
        return self.lin2(F.relu(self.lin1(zu * zv))).squeeze(-1)


class GnnModel(nn.Module):
    """A stack of PyG layers as gnn-train trained it (see the module's doc)."""

    def __init__(self, meta):
        super().__init__()
        from torch_geometric.nn import GATConv, GCNConv, RGCNConv, SAGEConv

        self.meta = dict(meta)
        if meta.get("format") != "gnn-model":
            raise ValueError("not a gnn-train model file (metadata format is not gnn-model)")
        if _int(meta, "version") != 1:
            raise ValueError(f"model file version {meta.get('version')}, this module reads 1")
        self.kind = meta["model"]
        self.layers = _int(meta, "layers")
        widths = json.loads(meta["widths"])
        self.act = F.elu if meta.get("activation") == "elu" else F.relu
        self.normalize_features = _int(meta, "normalize_features", 0) == 1
        self.task = meta.get("task", "node")
        self.weighted = meta.get("edge_weights") == "multiply"
        self.convs = nn.ModuleList()
        for l in range(self.layers):
            fin, fout, last = widths[l], widths[l + 1], l == self.layers - 1
            if self.kind == "gcn":
                conv = GCNConv(fin, fout, normalize=False, add_self_loops=False)
            elif self.kind == "sage":
                aggr = meta.get("aggr")
                if aggr not in _AGGR:
                    raise ValueError(f"aggregator {aggr!r} has no SAGEConv equivalent "
                                     "(mean, sum or max); its tensors are in the file as trained")
                make = _weighted_sage if self.weighted else SAGEConv
                conv = make(fin, fout, aggr=_AGGR[aggr], root_weight=True, bias=True)
            elif self.kind == "gat":
                if meta.get("attention") != "gat":
                    raise ValueError(f"attention function {meta.get('attention')!r} (a plug-in) has "
                                     "no GATConv equivalent; its tensors are in the file under attn.*")
                heads = _int(meta, "out_heads" if last else "heads")
                out = fout if last else fout // heads
                conv = GATConv(fin, out, heads=heads, concat=not last,
                               negative_slope=float(meta["negative_slope"]),
                               dropout=float(meta.get("attn_dropout", 0)), add_self_loops=True,
                               bias=True)
            elif self.kind == "rgcn":
                rels = json.loads(meta["relations"])
                bases = _int(meta, "num_bases", 0)
                conv = RGCNConv(fin, fout, num_relations=len(rels),
                                num_bases=bases if bases > 0 else None, aggr="mean",
                                root_weight=True, bias=True)
            else:
                raise ValueError(f"model {self.kind!r} has no PyG equivalent here")
            self.convs.append(conv)
        self.embed_dim = _int(meta, "embed_dim", 0)
        self.embed_layout = meta.get("embed_layout", "none")
        if self.embed_dim:
            self.embedding = nn.Embedding(_int(meta, "num_nodes"), self.embed_dim)
        if self.task == "link" and meta.get("decoder") == "mlp":
            self.decoder = MLPDecoder(widths[-1])
        self.dropout = float(meta.get("dropout", 0))

    def inputs(self, x=None, n_id=None):
        """The model's input rows: features, and the learnable rows when it has
        them (n_id: the graph-file ids of x's rows; default all nodes)."""
        if x is not None and self.normalize_features:
            s = x.double().sum(dim=1, keepdim=True)
            inv = torch.where(s != 0, 1.0 / s, torch.ones_like(s)).float()
            x = x * inv
        if not self.embed_dim:
            if x is None:
                raise ValueError("the model reads node features: pass x")
            return x
        rows = self.embedding.weight if n_id is None else self.embedding(n_id)
        if self.embed_layout == "concat":
            return rows if x is None or x.shape[1] == 0 else torch.cat([x, rows], dim=1)
        # typed: the featureless types' rows in the first embed_dim columns
        off = json.loads(self.meta["node_type_offsets"])
        fdim = json.loads(self.meta["node_type_feat_dim"])
        n = rows.shape[0]
        ids = torch.arange(n) if n_id is None else n_id
        width = _int(self.meta, "in_dim")
        out = torch.zeros(n, width, dtype=rows.dtype, device=rows.device)
        if x is not None:
            out[:, :x.shape[1]] = x
        for t, w in enumerate(fdim):
            if w == 0:
                m = (ids >= off[t]) & (ids < off[t + 1])
                out[m] = 0.0
                out[m, :self.embed_dim] = rows[m]
        return out

    def encode(self, x, edge_index, edge_weight=None, edge_type=None, n_id=None):
        """The last layer's output per node: logits (node classification) or
        the node embeddings (link prediction). edge_weight: the graph's stored
        weights (load_graph's data.edge_weight), read only where gnn-train
        read them (metadata edge_weights "multiply"), required there."""
        h = self.inputs(x, n_id)
        n = h.shape[0]
        if self.kind == "gcn":
            ei, w = _gcn_weights(edge_index, n)
        elif self.weighted and edge_weight is None:
            raise ValueError("this model weighs sum or mean aggregation by the stored edge "
                             "weights, as gnn-train trained it: pass edge_weight "
                             "(load_graph's data.edge_weight)")
        for l, conv in enumerate(self.convs):
            h = F.dropout(h, self.dropout, self.training)
            if self.kind == "gcn":
                h = conv(h, ei, w)
            elif self.kind == "rgcn":
                if edge_type is None:
                    raise ValueError("R-GCN needs edge_type (load_graph gives it)")
                h = _rgcn_per_relation(conv, h, edge_index, edge_type)
            elif self.weighted:
                h = conv(h, edge_index, edge_weight)
            else:
                h = conv(h, edge_index)
            if l < self.layers - 1:
                h = self.act(h)
        return h

    forward = encode

    def decode(self, z, pairs):
        """Link scores (logits) of pairs (2 x P: sources, destinations)."""
        zu, zv = z[pairs[0]], z[pairs[1]]
        if hasattr(self, "decoder"):
            return self.decoder(zu, zv)
        return (zu * zv).sum(dim=-1)


def build_model(meta):
    """An untrained GnnModel of the architecture in meta (a file's metadata)."""
    return GnnModel(meta)


def load_model(path, map_location="cpu"):
    """The model in a gnn-train --save-model file, weights loaded, in eval mode."""
    tensors, meta = read_safetensors(path)
    m = GnnModel(meta)
    m.load_state_dict({k: v.to(map_location) for k, v in tensors.items()}, strict=True)
    return m.to(map_location).eval()
