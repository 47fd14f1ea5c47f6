"""The PyTorch side of bench/ddp_training.py: PyTorch DDP (gloo, CPU) training an MLP, run by
torchrun. ddprun's own runtime trains the same model in bench/ddp_mlp.cc. With DEVICE=cuda, on
the rank's GPU over NCCL instead (the GPU bundle's comparison, bench/gpu_run.sh).

The model: IN inputs, LAYERS linear layers of HIDDEN units with ReLU between them, one output
(2.36 M parameters at the defaults); BATCH samples a rank a step, SGD, mean squared error.
After 5 warm-up steps, STEPS steps are timed between two barriers. Rank 0 prints one line:
  torch-ddp world=W device=D params=P batch/rank=B step_ms=T samples_per_s=S
Environment: IN (256), HIDDEN (1024), LAYERS (4), BATCH (64), STEPS (50), BUCKET_MB (25, DDP's
bucket_cap_mb), DEVICE (cpu).
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
    on_gpu = os.environ.get("DEVICE", "cpu") == "cuda"
    if on_gpu:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if on_gpu else "gloo")
    world = dist.get_world_size()
    inputs, hidden = setting("IN", 256), setting("HIDDEN", 1024)
    layers, batch = setting("LAYERS", 4), setting("BATCH", 64)
    steps = setting("STEPS", 50)
    torch.manual_seed(0)
    model = DistributedDataParallel(make_model(inputs, hidden, layers).to(device),
                                    device_ids=[device.index] if on_gpu else None,
                                    bucket_cap_mb=setting("BUCKET_MB", 25, float))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    features = torch.randn(batch, inputs).to(device)
    targets = torch.randn(batch, 1).to(device)
    loss_function = nn.MSELoss()

    def step():
        optimizer.zero_grad()
        loss_function(model(features), targets).backward()
        optimizer.step()

    def finish_queued_work():
        if on_gpu:
            torch.cuda.synchronize(device)
        dist.barrier()

    for _ in range(5):
        step()
    finish_queued_work()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    finish_queued_work()
    seconds = time.perf_counter() - start
    if dist.get_rank() == 0:
        parameters = sum(p.numel() for p in model.parameters())
        print(f"torch-ddp world={world} device={device.type} params={parameters} "
              f"batch/rank={batch} step_ms={1000 * seconds / steps:.2f} "
              f"samples_per_s={batch * world * steps / seconds:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
