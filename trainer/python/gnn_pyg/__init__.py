"""Take gnn-train's models and graph files to PyTorch Geometric.

    from gnn_pyg import load_graph, load_model
    data = load_graph("cora.h5")                 # a torch_geometric.data.Data
    model = load_model("gcn.safetensors")        # a torch.nn.Module of PyG layers
    logits = model(data.x, data.edge_index)      # what gnn-train computed

`gnn-train --save-model FILE.safetensors` writes the model; `load_graph`
reads the HDF5 graph files of `gnn-dataset` (docs/FORMAT.md).
"""
from .data import load_graph
from .model import GnnModel, build_model, load_model
from .safetensors import read_safetensors

__all__ = ["load_graph", "load_model", "build_model", "GnnModel", "read_safetensors"]
