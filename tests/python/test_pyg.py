"""gnn-train --save-model against PyTorch Geometric: the PyG model that
trainer/python/gnn_pyg builds from the file gives gnn-train's own outputs.

  run.sh test_pyg.py GNN_TRAIN GNN_DATASET GNN_PARTITION MPIEXEC WORKDIR

For each case gnn-train trains, writes the model (--save-model) and its
outputs (--save-predictions logits, or --save-embeddings for link
prediction); gnn_pyg.load_model builds the PyG model, which must give the
same logits within 1e-4 (max absolute difference), the same test accuracy
(or AUC) as the run reported, and PyG's state dict names exactly. Cora
(GCN, GraphSAGE, GAT; from ../shared/datasets, skipped where absent, a
failure under CI=true), then graphs made here: a directed weighted graph
with self loops and repeated edges (GCN's normalisation), GraphSAGE with
sum and max, R-GCN with bases and learnable rows of a featureless type,
learnable rows beside normalised features, link prediction's MLP decoder,
and a model trained on 2 ranks.
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import torch

from gnn_pyg import load_graph, load_model, read_safetensors

TOL = 1e-4
train, dataset, partition, mpiexec, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []
shared = os.environ.get("GNN_SHARED_DATASETS", os.path.join(os.path.dirname(__file__), "../../../shared/datasets"))
cora_dir = os.path.join(shared, "cora")


def run(*args, ok=True):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} exited {p.returncode}:\n{p.stderr}")
    return p


def path(name):
    return os.path.join(work, name)


def check(case, cond, what):
    print(f"{'ok  ' if cond else 'FAIL'} {case}: {what}")
    if not cond:
        failures.append(f"{case}: {what}")


def compare(case, graph, model_file, ref, pairs=None, accuracy=True, relative=False):
    """PyG's output of graph against ref (N x C) within TOL, or with relative
    within TOL times its largest magnitude (sums of many large terms); the
    run's test metric."""
    data = load_graph(graph)
    model = load_model(model_file)
    tensors, meta = read_safetensors(model_file)
    check(case, sorted(model.state_dict().keys()) == sorted(tensors.keys()),
          f"tensor names are the PyG model's ({len(tensors)})")
    try:
        from safetensors.torch import load_file
        lib = load_file(model_file)
        check(case, all(torch.equal(lib[k], tensors[k]) for k in tensors) and lib.keys() == tensors.keys(),
              "the safetensors package reads the same tensors")
    except ImportError:
        pass
    with torch.no_grad():
        out = model(data.x if "x" in data else None, data.edge_index,
                    edge_type=data.edge_type if meta["model"] == "rgcn" else None,
                    edge_weight=getattr(data, "edge_weight", None))
    diff = (out - torch.from_numpy(ref)).abs().max().item()
    scale = max(1.0, float(np.abs(ref).max())) if relative else 1.0
    check(case, diff <= TOL * scale,
          f"max |PyG - gnn-train| = {diff:.3g} over {ref.shape} (<= {TOL * scale:.3g})")
    if meta["task"] == "node" and accuracy:
        m = data.test_mask
        acc = (out[m].argmax(1) == data.y[m]).double().mean().item()
        want = float(meta["test_acc"])
        check(case, abs(acc - want) < 0.5 / int(m.sum()),
              f"PyG test accuracy {100 * acc:.2f} % = the run's {100 * want:.2f} %")
    if pairs is not None:
        with h5py.File(graph) as f:
            pos = torch.from_numpy(f["link/test_pos"][:]).T
            neg = torch.from_numpy(f["link/test_neg"][:]).T
        with torch.no_grad():
            sp, sn = model.decode(out, pos), model.decode(out, neg)
        # AUC: the share of (positive, negative) pairs ranked right, ties half
        gt = (sp[:, None] > sn[None, :]).double().mean() + 0.5 * (sp[:, None] == sn[None, :]).double().mean()
        want = float(meta["test_auc"])
        check(case, abs(gt.item() - want) <= 1e-4,
              f"PyG test AUC {100 * gt.item():.3f} % = the run's {100 * want:.3f} %")
    return meta


def logits(h5):
    with h5py.File(h5) as f:
        return f["logits"][:]


def node_case(case, graph, *opts, accuracy=True, relative=False):
    st, pred = path(case + ".safetensors"), path(case + ".pred.h5")
    run(train, "--data", graph, "--threads", "2", "--save-model", st, "--save-predictions", pred, *opts)
    return compare(case, graph, st, logits(pred), accuracy=accuracy, relative=relative)


# ---- Cora: GCN, GraphSAGE, GAT ------------------------------------------------
if os.path.isdir(cora_dir):
    cora = path("cora.h5")
    run(dataset, "ogb", cora_dir, "-o", cora)
    node_case("cora-gcn", cora, "--model", "gcn", "--epochs", "40")
    node_case("cora-sage", cora, "--model", "sage", "--epochs", "5")
    node_case("cora-gat", cora, "--model", "gat", "--heads", "4", "--hidden", "8", "--epochs", "8")
    embed_opts = ("--model", "gcn", "--epochs", "20", "--embed-dim", "8", "--embed", "all",
                  "--normalize-features")
    node_case("cora-embed-normalized", cora, *embed_opts)
    # link prediction: the encoder's output and the MLP decoder's test AUC
    cl = path("cora-link.h5")
    run(dataset, "split-edges", cora, "-o", cl, "--seed", "3")
    st, emb = path("cora-link.safetensors"), path("cora-link.emb.h5")
    run(train, "--data", cl, "--threads", "2", "--task", "link", "--decoder", "mlp", "--model", "gcn",
        "--mode", "full", "--epochs", "15", "--save-model", st, "--save-embeddings", emb)
    with h5py.File(emb) as f:
        z = f["embedding"][:]
    compare("cora-link-mlp", cl, st, z, pairs=True)
    # 2 ranks over 2 parts: the model of one process (the rows gathered by graph-file id)
    parts = path("cora-2parts")
    run(partition, cora, "-k", "2", "-o", parts)
    st2 = path("cora-np2.safetensors")
    run(mpiexec, "-n", "2", train, "--data", parts, "--threads", "1", "--save-model", st2, *embed_opts)
    compare("cora-embed-normalized-2-ranks", cora, st2, logits(path("cora-embed-normalized.pred.h5")))
elif os.environ.get("CI") == "true":
    failures.append(f"shared dataset {cora_dir} is missing (required under CI=true)")
    print(f"FAIL {failures[-1]}")
else:
    print(f"SKIPPED the Cora cases: {cora_dir} is missing")

# ---- a directed, weighted graph with self loops and repeated edges: GCN ----------
rng = np.random.default_rng(7)
n, f, c = 400, 12, 3
y = rng.integers(0, c, n)
src = rng.integers(0, n, 3000)
dst = rng.integers(0, n, 3000)
same = y[src] == y[dst]
keep = same | (rng.random(3000) < 0.3)
src, dst = src[keep], dst[keep]
src = np.concatenate([src, np.arange(0, n, 10), src[:50]])  # self loops, repeated edges
dst = np.concatenate([dst, np.arange(0, n, 10), dst[:50]])
order = np.lexsort((src, dst))
src, dst = src[order], dst[order]
indptr = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=n))])
x = (rng.normal(size=(n, f)) + np.eye(c, f)[y] * 1.5).astype(np.float32)
perm = rng.permutation(n)
directed = path("directed.h5")
with h5py.File(directed, "w") as h:
    for k, v in dict(format="gnn-graph", version=1, num_nodes=n, num_edges=len(src), directed=1,
                     sorted=1, deduplicated=0, no_self_loops=0, symmetric=0, num_classes=c).items():
        h.attrs[k] = v
    h["indptr"], h["indices"] = indptr.astype(np.int64), src.astype(np.int64)
    h["weights"] = rng.uniform(0.5, 2.0, len(src)).astype(np.float32)
    h["feat"], h["label"] = x, y.astype(np.int64)
    h["split/train"], h["split/valid"], h["split/test"] = np.sort(perm[:200]), np.sort(perm[200:300]), np.sort(perm[300:])
meta = node_case("directed-weighted-gcn", directed, "--model", "gcn", "--epochs", "30", "--hidden", "16")
node_case("directed-weighted-gat", directed, "--model", "gat", "--heads", "2", "--epochs", "10")
node_case("directed-weighted-sage-max", directed, "--model", "sage", "--aggr", "max", "--epochs", "5")
# GraphSAGE weighs sum and mean by the stored weights on the whole graph (the
# file says so, and the PyG model multiplies its messages), not on a sampled
# block of one process
meta = node_case("directed-weighted-sage-mean-full", directed, "--model", "sage", "--mode", "full",
                 "--epochs", "10")
check("directed-weighted-sage-mean-full", meta["edge_weights"] == "multiply", "edge_weights multiply")
d = load_graph(directed)
try:
    load_model(path("directed-weighted-sage-mean-full.safetensors"))(d.x, d.edge_index)
    check("directed-weighted-sage-mean-full", False, "without edge_weight: refused")
except ValueError as e:
    check("directed-weighted-sage-mean-full", "edge_weight" in str(e), f"without edge_weight: refused ({e})")
meta = node_case("directed-weighted-sage-sum-minibatch", directed, "--model", "sage", "--aggr", "sum",
                 "--epochs", "5", relative=True)
check("directed-weighted-sage-sum-minibatch", meta["edge_weights"] == "ignored", "edge_weights ignored")
# ... and over ranks alike: full graph weighted, mini-batches not
dparts = path("directed-2parts")
run(partition, directed, "-k", "2", "-o", dparts, "--halo-hops", "2")
for mode, want in (("full", "multiply"), ("minibatch", "ignored")):
    case = f"directed-weighted-sage-sum-{mode}-2-ranks"
    st, pred = path(case + ".safetensors"), path(case + ".pred.h5")
    run(mpiexec, "-n", "2", train, "--data", dparts, "--threads", "1", "--model", "sage", "--aggr", "sum",
        "--mode", mode, "--epochs", "5", "--save-model", st, "--save-predictions", pred)
    meta = compare(case, directed, st, logits(pred), relative=True)
    check(case, meta["edge_weights"] == want, f"edge_weights {want}")

# ---- GraphSAGE with sum and max on an SBM graph ----------------------------------------
sbm = path("sbm.h5")
run(dataset, "generate", "sbm", "-n", "1500", "--classes", "4", "-o", sbm)
node_case("sbm-sage-sum", sbm, "--model", "sage", "--aggr", "sum", "--mode", "full", "--epochs", "10",
          relative=True)
node_case("sbm-sage-max", sbm, "--model", "sage", "--aggr", "max", "--epochs", "3")

# ---- R-GCN with bases, learnable rows of a featureless type -------------------------
hs = path("hsbm.h5")
run(dataset, "generate", "hsbm", "-n", "2000", "--featureless", "1", "-o", hs)
meta = node_case("hsbm-rgcn-bases-embed", hs, "--model", "rgcn", "--num-bases", "2", "--embed-dim", "8",
                 "--epochs", "20")
node_case("hsbm-rgcn", hs, "--model", "rgcn", "--embed-dim", "8", "--epochs", "5", "--layers", "3")
check("hsbm-rgcn-bases-embed", meta["embed_layout"] == "typed" and "comp" in "".join(read_safetensors(path("hsbm-rgcn-bases-embed.safetensors"))[0]),
      "the file holds the bases' coefficients and the typed rows")

# ---- refusals ---------------------------------------------------------------------------------
p = run(train, "--data", sbm, "--epochs", "1", "--save-model", os.path.join(work, "no/such/dir/m.safetensors"), ok=False)
lines = [l for l in p.stderr.splitlines() if l.strip()]
check("refusal", p.returncode != 0 and len(lines) == 1 and "--save-model" in lines[0],
      f"an unwritable --save-model is one error line before training: {lines!r}")

if failures:
    print(f"FAILED: {len(failures)} check(s): " + "; ".join(failures))
    sys.exit(1)
print("all checks passed")
