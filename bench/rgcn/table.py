"""The table of bench/rgcn/run.sh from the files its runs left in DIR.

    table.py DIR DATASET REF...   gnn-train's run against each reference:
                                  ms/epoch, peak RSS, test accuracy, the
                                  ratios
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from runs import table  # noqa: E402

if __name__ == "__main__":
    table(sys.argv[1], sys.argv[2], sys.argv[3:])
