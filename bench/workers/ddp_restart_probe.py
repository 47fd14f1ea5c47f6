"""An ordinary PyTorch DDP script (gloo, a small MLP, SGD) for bench/python_restart.py: rank 1
fails at step 20 of the first attempt. In $PROBE_DIR it records the failure's time (`fail`) and,
for every attempt and rank, the time its first DDP step ended (`step.ATTEMPT.RANK`): the
process group formed, DDP's broadcast done, one forward, backward and optimizer step."""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def record(name):
    with open(os.path.join(os.environ["PROBE_DIR"], name), "w") as out:
        out.write(repr(time.time()))


def main():
    rank = int(os.environ["RANK"])
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(25):
        if attempt == 0 and rank == 1 and step == 20:
            record("fail")
            raise RuntimeError("rank 1 fails at step 20 of the first attempt")
        loss = model(torch.randn(16, 32)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step == 0:
            record("step.%d.%d" % (attempt, rank))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
