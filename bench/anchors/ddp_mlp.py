"""The PyTorch side of bench/ddp_training.py: PyTorch DDP (gloo, CPU) training an MLP, run by
torchrun. ddprun's own runtime trains the same model in bench/ddp_mlp.cc.

The model: IN inputs, LAYERS linear layers of HIDDEN units with ReLU between them, one output
(2.36 M parameters at the defaults); BATCH samples a rank a step, SGD, mean squared error.
After 5 warm-up steps, STEPS steps are timed between two barriers. Rank 0 prints one line:
  torch-ddp world=W params=P batch/rank=B step_ms=T samples_per_s=S
Environment: IN (256), HIDDEN (1024), LAYERS (4), BATCH (64), STEPS (50), BUCKET_MB (25, DDP's
bucket_cap_mb).
"""
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def setting(name, default, kind=int):
    return kind(os.environ.get(name, default))


def make_model(inputs, hidden, layers):
    modules = [nn.Linear(inputs, hidden), nn.ReLU()]
    for _ in range(layers - 2):
        modules += [nn.Linear(hidden, hidden), nn.ReLU()]
    modules.append(nn.Linear(hidden, 1))
    return nn.Sequential(*modules)


def main():
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    inputs, hidden = setting("IN", 256), setting("HIDDEN", 1024)
    layers, batch = setting("LAYERS", 4), setting("BATCH", 64)
    steps = setting("STEPS", 50)
    torch.manual_seed(0)
    model = DistributedDataParallel(make_model(inputs, hidden, layers),
                                    bucket_cap_mb=setting("BUCKET_MB", 25, float))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    features, targets = torch.randn(batch, inputs), torch.randn(batch, 1)
    loss_function = nn.MSELoss()

    def step():
        optimizer.zero_grad()
        loss_function(model(features), targets).backward()
        optimizer.step()

    for _ in range(5):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if dist.get_rank() == 0:
        parameters = sum(p.numel() for p in model.parameters())
        print(f"torch-ddp world={world} params={parameters} batch/rank={batch} "
              f"step_ms={1000 * seconds / steps:.2f} "
              f"samples_per_s={batch * world * steps / seconds:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
