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
