"""A worker entry point decorated with torch.distributed.elastic's @record: rank 1 raises, so the
decorator writes the exception (type, message, traceback) to TORCHELASTIC_ERROR_FILE and the
process exits 1. Rank 0 exits cleanly. With --exit CODE, rank 1 exits with CODE instead.
"""
import os
import sys

from torch.distributed.elastic.multiprocessing.errors import record


def load_shard(rank):
    raise ValueError(f"shard {rank} is missing: no file data/shard-{rank}.bin")


@record
def main():
    rank = int(os.environ["RANK"])
    if rank == 1:
        if "--exit" in sys.argv:
            sys.exit(int(sys.argv[sys.argv.index("--exit") + 1]))
        load_shard(rank)


if __name__ == "__main__":
    main()
