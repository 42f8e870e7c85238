"""The table of bench/rgcn/minibatch.sh from the files its runs left in DIR.

    mb_table.py DIR RANKS NAME   gnn-train in one process and on RANKS
                                 ranks against DGL (the runs NAME-ours,
                                 NAME-ranks, NAME-dgl): s/epoch (every
                                 epoch), peak RSS, test accuracy, the ratios
                                 (DGL's time / ours, our RSS / DGL's)
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from runs import rss  # noqa: E402


def ours(d, name):
    """(mean epoch_s over every epoch, test accuracy) of gnn-train's log."""
    try:
        lines = [json.loads(x) for x in open(f"{d}/{name}.json")]
    except (OSError, ValueError):
        return None, None
    ep = [x["epoch_s"] for x in lines if "epoch_s" in x and not x.get("final")]
    fin = [x for x in lines if x.get("final")]
    if not ep or not fin:
        return None, None
    return sum(ep) / len(ep), fin[-1].get("test_acc")


def dgl(d, name):
    try:
        x = json.loads(open(f"{d}/{name}.out").read().strip().splitlines()[-1])
        return x["epoch_s"], x["test_acc"]
    except (OSError, ValueError, KeyError, IndexError):
        return None, None


def main():
    d, ranks, name = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = [("gnn-train", ours(d, f"{name}-ours"), rss(d, f"{name}-ours")),
            (f"{ranks} ranks", ours(d, f"{name}-ranks"), rss(d, f"{name}-ranks")),
            ("DGL", dgl(d, f"{name}-dgl"), rss(d, f"{name}-dgl"))]
    ref_t, ref_mb = rows[2][1][0], rows[2][2]
    print("   trainer        s/epoch   peak RSS MB   test acc   DGL's time / ours   RSS / DGL's")
    for name, (t, acc), mb in rows:
        if t is None:
            print(f"   {name:<12}   (no result)")
            continue
        sp = f"{ref_t / t:.2f}x" if ref_t and name != "DGL" else ""
        rr = f"{mb / ref_mb:.2f}x" if mb and ref_mb and name != "DGL" else ""
        print(f"   {name:<12} {t:9.3f}   {mb or 0:11.0f}   {100 * (acc or 0):8.2f}"
              f"   {sp:>17}   {rr:>11}")


if __name__ == "__main__":
    main()
