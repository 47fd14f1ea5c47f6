"""A tqdm progress bar on every rank, as training scripts draw them: each update redraws the
bar's line with '\r' on stderr, and the bar ends with a newline. With --lines, rank 1 also prints
ordinary lines on stderr between its updates."""
import argparse
import os
import sys

import tqdm

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--lines", action="store_true")
args = parser.parse_args()
rank = int(os.environ["RANK"])
# Every update drawn: no rate limit, so the ranks redraw as often as they can.
for step in tqdm.tqdm(range(args.steps), desc=f"bar of rank {rank}", mininterval=0, miniters=1):
    if args.lines and rank == 1 and step % 10 == 0:
        tqdm.tqdm.write(f"rank 1 says {step}", file=sys.stderr)
