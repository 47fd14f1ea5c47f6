"""Reports, per attempt, how this worker started: whether torch was already imported when the
script began (a fork of the preloading interpreter) and its random draws. Rank 1 then fails
the first FAILING_ATTEMPTS attempts (argv[1]), once every rank has reported (a barrier); with
--kill-preload it first kills the preloading interpreter, in the first attempt."""
import os
import random
import sys

warm = "torch" in sys.modules
import numpy  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

rank = int(os.environ["RANK"])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
print("attempt=%d rank=%d warm=%s random=%r numpy=%r" % (
    attempt, rank, warm, random.random(), float(numpy.random.rand())))
sys.stdout.flush()
dist.init_process_group("gloo")
dist.barrier()
failing_attempts = int(sys.argv[1]) if len(sys.argv) > 1 else 0
if rank == 1 and attempt < failing_attempts:
    if "--kill-preload" in sys.argv and attempt == 0:
        with open(os.environ["PRELOAD_MARKER_FILE"]) as marker:
            os.kill(int(marker.read().split()[0]), 9)
    sys.exit(3)
