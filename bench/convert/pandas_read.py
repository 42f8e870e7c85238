"""Reference for the conversion benchmark: reads an OGB csv-layout folder
the way OGB's own loader does (pandas.read_csv on each .csv.gz, no header),
then prints one JSON line: seconds per file, uncompressed bytes read, and
peak RSS. Run with Debian's python3 (python3-pandas)."""
import gzip
import json
import os
import resource
import sys
import time

import pandas as pd


def uncompressed_size(path):
    # The ISIZE trailer holds the size mod 2^32: count by streaming instead.
    n = 0
    with gzip.open(path, "rb") as f:
        while True:
            b = f.read(1 << 24)
            if not b:
                return n
            n += len(b)


def main():
    raw = os.path.join(sys.argv[1], "raw")
    files = ["edge.csv.gz", "node-feat.csv.gz", "node-label.csv.gz"]
    out = {"files": {}, "seconds": 0.0, "bytes": 0}
    keep = []
    for name in files:
        path = os.path.join(raw, name)
        if not os.path.exists(path):
            continue
        size = uncompressed_size(path)
        t0 = time.perf_counter()
        df = pd.read_csv(path, header=None).values
        dt = time.perf_counter() - t0
        keep.append(df)  # held, as a loader holds what it read
        out["files"][name] = {"seconds": dt, "bytes": size, "shape": list(df.shape)}
        out["seconds"] += dt
        out["bytes"] += size
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["pandas"] = pd.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
