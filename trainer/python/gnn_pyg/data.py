"""A graph file of gnn-dataset (HDF5, docs/FORMAT.md) as a PyG Data object."""
import h5py
import numpy as np
import torch
from torch_geometric.data import Data


def _attr_str(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def load_graph(path, features=True):
    """Read the graph file at path into a torch_geometric.data.Data.

    edge_index (2 x E): one column (source, destination) per stored CSR
    entry, in the file's order (an undirected graph lists every edge both
    ways, as the file stores it). Present when the file has them:
      x            node features (N x F, float32; a typed graph's padded
                   to the widest type, as gnn-train reads them)
      edge_weight  the stored edge weights
      y            labels (-1: unlabelled)
      train_mask, val_mask, test_mask   from split/train, valid, test
      orig_id      each node's id in the source data
      node_type, edge_type (typed graphs, format version 2), with
      node_types, relations (names) and node_type_offsets
    features=False skips reading x.
    """
    with h5py.File(path, "r") as f:
        if _attr_str(f.attrs.get("format", "")) != "gnn-graph":
            raise ValueError(f"{path}: not a gnn graph file (its format attribute is not gnn-graph)")
        n = int(f.attrs["num_nodes"])
        indptr = f["indptr"][:].astype(np.int64)
        src = f["indices"][:].astype(np.int64)
        dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        d = Data(edge_index=torch.from_numpy(np.stack([src, dst])), num_nodes=n)
        if "weights" in f:
            d.edge_weight = torch.from_numpy(f["weights"][:].astype(np.float32))
        typed = int(f.attrs["version"]) >= 2 and "node_type_offsets" in f
        if typed:
            types = _attr_str(f.attrs["node_types"]).split(",")
            off = f["node_type_offsets"][:].astype(np.int64)
            d.node_types = types
            d.relations = _attr_str(f.attrs["relations"]).split(",")
            d.node_type_offsets = torch.from_numpy(off)
            d.node_type = torch.from_numpy(np.repeat(np.arange(len(types)), np.diff(off)))
            d.edge_type = torch.from_numpy(f["edge_type"][:].astype(np.int64))
        if features:
            if typed:
                widths = [f[f"node_feat/{t}"].shape[1] if f"node_feat/{t}" in f else 0 for t in types]
                x = np.zeros((n, max(widths)), dtype=np.float32)
                for i, t in enumerate(types):
                    if widths[i]:
                        x[off[i]:off[i + 1], :widths[i]] = f[f"node_feat/{t}"][:]
                d.x = torch.from_numpy(x)
            elif "feat" in f:
                d.x = torch.from_numpy(f["feat"][:].astype(np.float32))
        if "label" in f:
            d.y = torch.from_numpy(f["label"][:].astype(np.int64))
        for key, name in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
            if f"split/{key}" in f:
                m = torch.zeros(n, dtype=torch.bool)
                m[torch.from_numpy(f[f"split/{key}"][:].astype(np.int64))] = True
                d[name] = m
        if "orig_id" in f:
            d.orig_id = torch.from_numpy(f["orig_id"][:].astype(np.int64))
    return d
