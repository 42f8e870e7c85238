"""What a benchmark run left in its directory, for the table scripts of
bench/*/run.sh: the peak RSS GNU time recorded in NAME.time, and the last
JSON record of a run (gnn-train's NAME.json log, or a reference's last
line of NAME.out)."""
import json
import re


def rss(d, name):
    """Peak RSS in MB of run NAME, or None."""
    try:
        t = open(f"{d}/{name}.time").read()
        return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
    except (OSError, AttributeError):
        return None


def last_record(d, name, ours):
    """The last JSON record of run NAME (ours: its --log-json file); raises
    OSError / ValueError / IndexError when there is none."""
    if ours:
        return [json.loads(l) for l in open(f"{d}/{name}.json")][-1]
    return json.loads(open(f"{d}/{name}.out").read().strip().splitlines()[-1])


def result(d, name, ours):
    """(epoch_s_mean, test accuracy (mean over runs), peak RSS MB) of run
    NAME, each None when it left no result."""
    try:
        x = last_record(d, name, ours)
        acc = x.get("test_acc_mean", x.get("test_acc"))
        return x["epoch_s_mean"], acc, rss(d, name)
    except (OSError, ValueError, KeyError, IndexError):
        return None, None, None


def table(d, ds, refs):
    """gnn-train's run ours-DS against each reference REF-DS: ms/epoch,
    peak RSS, test accuracy and the ratios (ours faster: their time / ours;
    ours RSS: ours / theirs)."""
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
