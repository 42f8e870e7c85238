"""The table of bench/embed/run.sh from the files its runs left in DIR.

    table.py DIR DATASET REF...   gnn-train's run against each reference:
                                  ms/epoch, peak RSS, test accuracy (mean
                                  over the runs), the ratios

gnn-train's figures come from the last line of ours-DATASET.json, a
reference's from the last line of REF-DATASET.out; peak RSS from
NAME.time (GNU time -v). A run without them prints "(no result)".
"""
import json
import re
import sys


def rss(d, name):
    try:
        t = open(f"{d}/{name}.time").read()
        return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
    except (OSError, AttributeError):
        return None


def result(d, name, ours):
    try:
        if ours:
            x = [json.loads(l) for l in open(f"{d}/{name}.json")][-1]
        else:
            x = json.loads(open(f"{d}/{name}.out").read().strip().splitlines()[-1])
        acc = x.get("test_acc_mean", x.get("test_acc"))
        return x["epoch_s_mean"], acc, rss(d, name)
    except (OSError, ValueError, KeyError, IndexError):
        return None, None, None


def main():
    d, ds, refs = sys.argv[1], sys.argv[2], sys.argv[3:]
    o = result(d, f"ours-{ds}", True)
    print(f"   {ds}: trainer   ms/epoch   peak RSS MB   test acc   ours faster   ours RSS")
    for name in ["ours"] + refs:
        t, acc, mb = o if name == "ours" else result(d, f"{name}-{ds}", False)
        if t is None:
            print(f"   {name:>12}   (no result)")
            continue
        sp = f"{t / o[0]:.2f}x" if name != "ours" and o[0] else ""
        rr = f"{o[2] / mb:.2f}x" if name != "ours" and mb and o[2] else ""
        print(f"   {name:>12}   {1e3 * t:8.2f}   {mb or 0:11.0f}   {100 * acc:8.2f}"
              f"   {sp:>11}   {rr:>8}")


if __name__ == "__main__":
    main()
