"""The table of bench/embed/run.sh from the files its runs left in DIR.

    table.py DIR DATASET REF...   gnn-train's run against each reference:
                                  ms/epoch, peak RSS, test accuracy (mean
                                  over the runs), the ratios
    table.py --minibatch DIR DATASET
                                  mini-batches (ours-mb, dgl-mb): s/epoch,
                                  peak RSS, each epoch's training loss

gnn-train's figures come from the last line of ours-DATASET.json, a
reference's from the last line of REF-DATASET.out; peak RSS from
NAME.time (GNU time -v). A run without them prints "(no result)".
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from runs import rss, table  # noqa: E402


def minibatch(d, ds):
    print(f"   {ds}, mini-batches: trainer   s/epoch   peak RSS MB   ours faster   ours RSS"
          f"   training loss per epoch")
    rows = {}
    for name in ("ours-mb", "dgl-mb"):
        try:
            lines = [json.loads(l) for l in open(f"{d}/{name}-{ds}.json")]
            eps = [x for x in lines if "epoch" in x and not x.get("final")]
            t = sum(x["epoch_s"] for x in eps) / len(eps)
            rows[name] = (t, rss(d, f"{name}-{ds}"), [x["loss"] for x in eps])
        except (OSError, ValueError, KeyError, ZeroDivisionError):
            rows[name] = None
    o = rows["ours-mb"]
    for name, r in rows.items():
        if r is None:
            print(f"   {name:>12}   (no result)")
            continue
        sp = f"{r[0] / o[0]:.2f}x" if o and name != "ours-mb" else ""
        rr = f"{o[1] / r[1]:.2f}x" if o and name != "ours-mb" and r[1] and o[1] else ""
        print(f"   {name:>12}   {r[0]:7.2f}   {r[1] or 0:11.0f}   {sp:>11}   {rr:>8}   "
              + " ".join(f"{v:.3f}" for v in r[2]))


def main():
    if sys.argv[1] == "--minibatch":
        minibatch(sys.argv[2], sys.argv[3])
        return
    table(sys.argv[1], sys.argv[2], sys.argv[3:])


if __name__ == "__main__":
    main()
