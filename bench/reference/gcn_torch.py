"""PyTorch reference: a 2-layer GCN (Kipf & Welling) trained full-batch on
a graph file written by gnn-dataset, the way the GCN paper trains Cora:
A+I with symmetric normalisation, hidden 16, dropout 0.5, Adam lr 0.01,
weight decay 5e-4 on the first layer, 200 epochs, test accuracy at the
best validation accuracy. Used to measure how learnable a generated graph
is. It is gnn_torch.py (beside this file) with its gcn defaults, which
are these; that script takes every other option too.

    python3 bench/reference/gcn_torch.py GRAPH.h5 [--runs N] [--seed S]
                                         [--normalize-features] [--threads T]

Prints one JSON line. Needs torch, h5py and numpy: run it with the
interpreter bench/reference/python.sh prints.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gnn_torch  # noqa: E402

if __name__ == "__main__":
    gnn_torch.main()
