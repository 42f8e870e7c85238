"""The comparison table of bench/train/run.sh, from the files it leaves in
BENCH_DIR: for trainer T (ours and the references torch, pyg, torch-dgl,
pyg-dgl, dgl), dataset D and model M,
T-D-M.json (--log-json: one line per epoch, a final line) and T-D-M.time
(GNU time -v).

    python3 bench/train/table.py BENCH_DIR DATASET... -- MODEL...

Per-epoch time: mean epoch_s over every epoch but the first of each run
(training step only; evaluation is timed apart in eval_s). Test accuracy:
mean over runs of the test accuracy at the best-validation epoch, +- the
standard deviation when there are several runs. Targets, against each
reference (torch: the PyTorch reference; pyg: PyTorch Geometric's layers;
both on the newest torch, and as torch-dgl and pyg-dgl on the older torch
of DGL's environment; dgl: DGL's layers) and against the fastest of them:
ours at least 5x faster per epoch (gat: 5x the plain PyTorch model, torch
and torch-dgl, and 3x the others and the fastest), at most 0.5x the peak
RSS, accuracy equal (the means differ by at most twice the combined
run-to-run standard deviation, or one point, whichever is larger). A
reference whose files are absent (not installed) is left out.
"""
import json
import math
import os
import re
import sys

SPEED_TARGET, RSS_TARGET = 5.0, 0.5
GAT_SPEED_TARGET = 3.0
REFERENCES = ("torch", "pyg", "torch-dgl", "pyg-dgl", "dgl")


def speed_target(model, ref):
    """How many times faster per epoch ours must be than reference ref
    (None: the fastest) for model."""
    if model == "gat" and ref not in ("torch", "torch-dgl"):
        return GAT_SPEED_TARGET
    return SPEED_TARGET


def read_log(path):
    epochs, final = [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if rec.get("final"):
                final = rec
            else:
                epochs.append(rec)
    return epochs, final


def peak_rss_mb(path):
    with open(path) as f:
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", f.read())
    return int(m.group(1)) / 1024.0 if m else None


def result(d, trainer, ds, model):
    base = os.path.join(d, f"{trainer}-{ds}-{model}")
    r = {"ok": False}
    try:
        epochs, final = read_log(base + ".json")
    except (OSError, ValueError):
        return r
    if not epochs or not final:
        return r
    warm = [e["epoch_s"] for e in epochs if e["epoch"] > 1] or [e["epoch_s"] for e in epochs]
    r["epoch_ms"] = 1e3 * sum(warm) / len(warm)
    r["acc"] = final.get("test_acc_mean", final["test_acc"])
    r["std"] = final.get("test_acc_std", 0.0)
    r["runs"] = final.get("runs", 1)
    try:
        r["rss"] = peak_rss_mb(base + ".time")
    except OSError:
        r["rss"] = None
    r["ok"] = True
    return r


def fmt_acc(r):
    s = f"{100 * r['acc']:.1f}"
    return s + (f" ± {100 * r['std']:.1f}" if r["runs"] > 1 else "")


def main():
    argv = sys.argv[1:]
    if "--" not in argv or len(argv) < 4:
        sys.exit(__doc__)
    k = argv.index("--")
    d, datasets, models = argv[0], argv[1:k], argv[k + 1:]
    print("| model | dataset | trainer | ms/epoch | its time / ours | peak RSS MB "
          "| ours / its RSS | test acc % |")
    print("|---|---|---|---|---|---|---|---|")
    verdicts = []
    for ds in datasets:
        for m in models:
            o = result(d, "ours", ds, m)
            if not o["ok"]:
                print(f"| {m} | {ds} | ours | failed or missing | | | | |")
                verdicts.append(f"{m}/{ds}: no comparison (ours failed)")
                continue
            print(f"| {m} | {ds} | ours | {o['epoch_ms']:.1f} | | {o['rss'] or math.nan:.0f} "
                  f"| | {fmt_acc(o)} |")
            fastest = None
            for ref in REFERENCES:
                absent = not os.path.exists(os.path.join(d, f"{ref}-{ds}-{m}.time"))
                t = result(d, ref, ds, m)
                if not t["ok"]:
                    if not absent:
                        print(f"| {m} | {ds} | {ref} | failed or missing | | | | |")
                        verdicts.append(f"{m}/{ds} against {ref}: no comparison ({ref} failed)")
                    continue
                speed = t["epoch_ms"] / o["epoch_ms"]
                if fastest is None or speed < fastest[1]:
                    fastest = (ref, speed)
                rss = (o["rss"] / t["rss"]) if o["rss"] and t["rss"] else math.nan
                diff = o["acc"] - t["acc"]
                tol = max(2 * math.hypot(o["std"], t["std"]), 0.01)
                print(f"| {m} | {ds} | {ref} | {t['epoch_ms']:.1f} | {speed:.2f}x "
                      f"| {t['rss'] or math.nan:.0f} | {rss:.2f}x | {fmt_acc(t)} |")
                want = speed_target(m, ref)
                verdicts.append(
                    f"{m}/{ds} against {ref}: speed {speed:.2f}x "
                    f"({'met' if speed >= want else 'NOT met'},"
                    f" target >= {want:g}x); RSS {rss:.2f}x "
                    f"({'met' if rss <= RSS_TARGET else 'NOT met'}, target <= {RSS_TARGET:g}x); "
                    f"accuracy {100 * diff:+.1f} points "
                    f"({'equal' if abs(diff) <= tol else 'DIFFERENT'}, tolerance "
                    f"{100 * tol:.1f})")
            if fastest:
                want = speed_target(m, None)
                verdicts.append(
                    f"{m}/{ds} against the fastest reference ({fastest[0]}): speed "
                    f"{fastest[1]:.2f}x ({'met' if fastest[1] >= want else 'NOT met'},"
                    f" target >= {want:g}x)")
    print()
    for v in verdicts:
        print(v)


if __name__ == "__main__":
    main()
