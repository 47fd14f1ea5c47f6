"""Forms the PyTorch process group (gloo, env://: the TCPStore at MASTER_ADDR:MASTER_PORT, which
ddprun serves), checks it with one all_reduce, and exits. Rank 0 prints "world=W port=MASTER_PORT restart=N".

With --fail-first-attempt, every rank exits 1 after forming the group in the first attempt
(TORCHELASTIC_RESTART_COUNT=0): the store's connections were open, so a restarted round meets
at its port while the old connections sit in TIME_WAIT.
"""
import os
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    total = torch.ones(1)
    dist.all_reduce(total)
    assert int(total.item()) == dist.get_world_size()
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    if dist.get_rank() == 0:
        print(f"world={dist.get_world_size()} port={os.environ['MASTER_PORT']} restart={restart}",
              flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if "--fail-first-attempt" in sys.argv and restart == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
