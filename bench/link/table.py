"""The tables of bench/link/run.sh from the files its runs left in DIR.

    table.py full DIR DATASET REF...   gnn-train's full-graph run against
                                       each reference: ms/epoch, peak RSS,
                                       test AUC / AP, the ratios
    table.py minibatch DIR DATASET     the edge mini-batch runs (ours-mb0,
                                       ours-mb, dgl-mb): s/epoch, RSS,
                                       metrics, DGL's time over each

A run's figures: gnn-train's from the last line of NAME.json, a
reference's from the last line of NAME.out; peak RSS from NAME.time (GNU
time -v). A run without them prints "(no result)".
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from runs import last_record, rss  # noqa: E402


def result(d, name, ours):
    try:
        x = last_record(d, name, ours)
        return x["epoch_s_mean"], x["test_auc"], x["test_ap"], rss(d, name)
    except (OSError, ValueError, KeyError, IndexError):
        return None, None, None, None


def full(d, ds, refs):
    o = result(d, f"ours-{ds}", True)
    print(f"   {ds}: trainer      ms/epoch   peak RSS MB   test AUC   test AP   ours faster   ours RSS")
    for name in ["ours"] + refs:
        t, auc, ap, mb = o if name == "ours" else result(d, f"{name}-{ds}", False)
        if t is None:
            print(f"   {name:>16}   (no result)")
            continue
        sp = f"{t / o[0]:.2f}x" if name != "ours" and o[0] else ""
        rr = f"{o[3] / mb:.2f}x" if name != "ours" and mb and o[3] else ""
        print(f"   {name:>16}   {1e3 * t:9.2f}   {mb or 0:11.0f}   {100 * auc:8.2f}   {100 * ap:7.2f}"
              f"   {sp:>11}   {rr:>8}")


def minibatch(d, ds):
    names = ("ours-mb0", "ours-mb", "dgl-mb")
    rows = {n: result(d, f"{n}-{ds}", n.startswith("ours")) for n in names}
    print(f"   {ds}, edge mini-batches: trainer   s/epoch   peak RSS MB   test AUC   test AP"
          f"   dgl / this")
    dgl = rows["dgl-mb"][0]
    for name in names:
        t, auc, ap, mb = rows[name]
        if t is None:
            print(f"   {name:>16}   (no result)")
            continue
        sp = f"{dgl / t:.2f}x" if dgl and name != "dgl-mb" else ""
        print(f"   {name:>16}   {t:8.3f}   {mb or 0:11.0f}   {100 * auc:8.2f}   {100 * ap:7.2f}"
              f"   {sp:>10}")


if __name__ == "__main__":
    if sys.argv[1] == "full":
        full(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        minibatch(sys.argv[2], sys.argv[3])
