"""Reports, per attempt, how this worker started: whether torch was already imported when the
script began (a fork of the preloading interpreter), its random draws, and, with
--kill-preload, rank 1 of the first attempt kills the preloading interpreter before failing."""
import os
import random
import sys

warm = "torch" in sys.modules
import numpy  # noqa: E402
import torch  # noqa: E402

rank = int(os.environ["RANK"])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
print("attempt=%d rank=%d warm=%s random=%r numpy=%r" % (
    attempt, rank, warm, random.random(), float(numpy.random.rand())))
sys.stdout.flush()
failing_attempts = int(sys.argv[1]) if len(sys.argv) > 1 else 0
if rank == 1 and attempt < failing_attempts:
    if "--kill-preload" in sys.argv and attempt == 0:
        with open(os.environ["PRELOAD_MARKER_FILE"]) as marker:
            os.kill(int(marker.read().split()[0]), 9)
    sys.exit(3)
