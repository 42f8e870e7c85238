"""PyTorch reference for the neighbour sampler: uniform sampling without
replacement of up to `fanout` in-neighbours per node and hop, where hop h
samples for every node gathered so far (the destinations of the block,
as sampler.h and DGL's blocks do) and the new sources are deduplicated
against them, written the straightforward vectorised way
(one random key per candidate edge, a segmented sort, the first `fanout`
of each row; torch.unique to relabel). Same seeds, batch size and fanouts
as sampler_bench, on the same graph file; sampled edges counted the same
way (all layers).

--impl dgl samples with DGL's own sampler instead:
dgl.dataloading.NeighborSampler's sample_blocks, what its DataLoader
calls (uniform, without replacement, in-edges, per hop on the nodes
gathered so far): with more than one thread DGL's fused kernel, which
samples and deduplicates in one pass, on one thread sample_neighbors then
to_block (its C++ kernels, parallel over OMP_NUM_THREADS threads). The
graph is handed to DGL as the in-edge CSR itself (DGL's 'csc' format),
its formats built before timing.

    python3 bench/reference/sample_torch.py GRAPH.h5 [-b 1024] [-f 15,10,5]
                                            [-n BATCHES] [-s SEED] [--threads T]
                                            [--impl torch|dgl]

Prints one RESULT line. Needs torch, h5py and numpy (and dgl for --impl
dgl): run it with the interpreter bench/reference/python.sh prints
(`python.sh dgl` for DGL).
"""
import argparse
import time
import warnings

import h5py
import numpy as np
import torch

warnings.filterwarnings("ignore", message="scatter_reduce")


def sample_hop(indptr, indices, frontier, fanout, gen):
    """Sampled (row, source) pairs of one hop: row indexes frontier. Runs
    where indptr, indices and frontier lie (gen: a generator there)."""
    start = indptr[frontier]
    deg = indptr[frontier + 1] - start
    take = deg if fanout < 0 else torch.clamp(deg, max=fanout)
    total = int(deg.sum())
    dev = indices.device
    if total == 0:
        empty = torch.empty(0, dtype=torch.long, device=dev)
        return empty, empty
    row = torch.repeat_interleave(torch.arange(frontier.numel(), device=dev), deg)
    # Position of each candidate within its row.
    row_start = torch.cumsum(deg, 0) - deg
    pos = torch.arange(total, device=dev) - torch.repeat_interleave(row_start, deg)
    if fanout >= 0:
        # A random order within each row: sort by (row, random key).
        key = row.to(torch.float64) + torch.rand(total, generator=gen, dtype=torch.float64,
                                                 device=dev)
        order = torch.argsort(key)
        keep = pos < torch.repeat_interleave(take, deg)  # first `take` of each sorted row
        chosen = order[keep]
    else:
        chosen = torch.arange(total, device=dev)
    src = indices[torch.repeat_interleave(start, deg)[chosen] + pos[chosen]]
    return row[chosen], src


def sample_batch(indptr, indices, seeds, fanouts, gen):
    nodes = seeds
    edges = 0
    for fanout in fanouts:
        row, src = sample_hop(indptr, indices, nodes, fanout, gen)
        edges += src.numel()
        # Sources not seen in this batch join the node list.
        known = torch.cat([nodes, src])
        uniq, inverse = torch.unique(known, return_inverse=True)
        first = torch.full((uniq.numel(),), known.numel(), dtype=torch.long)
        first.scatter_reduce_(0, inverse, torch.arange(known.numel()), reduce="amin",
                              include_self=True)
        new = uniq[first >= nodes.numel()]
        nodes = torch.cat([nodes, new])
    return edges, nodes.numel()


def dgl_graph(indptr, indices):
    """The in-edge CSR (row v lists the sources of edges u -> v) as a
    DGLGraph: that is the CSC of the adjacency matrix."""
    import dgl
    n = indptr.numel() - 1
    g = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.long))), num_nodes=n)
    g.create_formats_()
    return g


def dgl_sample_batch(g, sampler, seeds):
    """DGL's NeighborSampler on one batch of seeds: (sampled edges, input
    nodes)."""
    _, _, blocks = sampler.sample_blocks(g, seeds)
    return sum(b.num_edges() for b in blocks), blocks[0].num_src_nodes()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("-b", "--batch", type=int, default=1024)
    ap.add_argument("-f", "--fanouts", default="15,10,5")
    ap.add_argument("-n", "--batches", type=int, default=20)
    ap.add_argument("-s", "--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--impl", choices=("torch", "dgl"), default="torch")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    fanouts = [int(x) for x in a.fanouts.split(",")]
    t0 = time.time()
    with h5py.File(a.graph, "r") as f:
        indptr = torch.from_numpy(np.asarray(f["indptr"][...], dtype=np.int64))
        indices = torch.from_numpy(np.asarray(f["indices"][...], dtype=np.int64))
        seeds = (np.asarray(f["split/train"][...], dtype=np.int64) if "split/train" in f
                 else np.arange(indptr.numel() - 1, dtype=np.int64))
    load_s = time.time() - t0
    rng = np.random.default_rng(a.seed)
    seeds = torch.from_numpy(rng.permutation(seeds))
    gen = torch.Generator().manual_seed(a.seed)
    need = (a.batches + 1) * a.batch
    if seeds.numel() < need:
        # repeated whole, so a batch (at most the set's size) holds no seed
        # twice unless it spans a repeat's end: DGL's fused kernel wants
        # distinct seeds, so batches are cut at the repeats
        reps = need // max(seeds.numel(), 1) + 1
        if a.impl == "dgl" and seeds.numel() % a.batch:
            keep = seeds.numel() - seeds.numel() % a.batch
            if keep == 0:
                raise SystemExit(f"{a.graph}: fewer seeds than one batch of {a.batch}")
            seeds = seeds[:keep]
            reps = need // keep + 1
        seeds = seeds.repeat(reps)
    if a.impl == "dgl":
        import dgl
        dgl.seed(a.seed)
        g = dgl_graph(indptr, indices)
        del indptr, indices
        # fanouts nearest hop first; DGL lists them from the input layer
        sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))

        def one(batch):
            return dgl_sample_batch(g, sampler, batch)
    else:
        def one(batch):
            return sample_batch(indptr, indices, batch, fanouts, gen)
    one(seeds[:a.batch])  # warm-up
    t0 = time.time()
    edges = inputs = 0
    for i in range(1, a.batches + 1):
        e, n = one(seeds[i * a.batch:(i + 1) * a.batch])
        edges += e
        inputs += n
    s = time.time() - t0
    print(f"RESULT mode={a.impl} threads={torch.get_num_threads()} batch={a.batch} "
          f"fanouts={a.fanouts} batches={a.batches} seconds={s:.4f} "
          f"batches_per_s={a.batches / s:.3f} edges_per_s={edges / s:.4e} "
          f"input_nodes_mean={inputs / a.batches:.1f} load_s={load_s:.1f}", flush=True)


if __name__ == "__main__":
    main()
