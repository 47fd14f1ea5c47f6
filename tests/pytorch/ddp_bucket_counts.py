"""An ordinary DDP script (gloo, a model of eight 256 x 256 layers in buckets of 0.3 MB) that reads
its own progress page, as ddprun's agent does, to show what ddprun's Python hook counts with no
line in the script: each of DDP's bucket all-reduces is one collective, and all of a backward's
are finished by the time it returns.

After two steps (DDP's first backward runs one bucket, and its second re-forms the buckets), it
runs 10 more and prints on every rank:
  buckets B counted N finished M open_after_backward K
B the buckets DDP formed, N and M the collectives counted issued and finished in those steps,
K the most found open right after a backward returned.
"""
import mmap
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

STEPS = 10
ISSUED, COMPLETED = 1, 2  # the page's words (ddprun/base/progress_page.h)


def main():
    dist.init_process_group("gloo")
    page = memoryview(mmap.mmap(int(os.environ["DDPRUN_PROGRESS_FD"]), 4096, mmap.MAP_SHARED,
                                mmap.PROT_READ)).cast("Q")
    torch.manual_seed(0)
    model = DistributedDataParallel(
        torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)]), bucket_cap_mb=0.3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(8, 256)

    def step():
        optimizer.zero_grad()
        model(inputs).pow(2).mean().backward()
        open_now = page[ISSUED] - page[COMPLETED]
        optimizer.step()
        return open_now
    step()
    step()
    issued, completed = page[ISSUED], page[COMPLETED]
    most_open = max(step() for _ in range(STEPS))
    sizes = model._get_ddp_logging_data()["rebuilt_bucket_sizes"]
    buckets = len(str(sizes).split(","))
    print("buckets %d counted %d finished %d open_after_backward %d"
          % (buckets, page[ISSUED] - issued, page[COMPLETED] - completed, most_open), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
