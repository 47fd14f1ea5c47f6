"""Ordinary PyTorch DDP training, as people launch with torchrun: nothing in it knows about
ddprun. init_process_group("gloo") with the default env:// rendezvous, DistributedSampler,
DDP(model), rank-0 torch.save. The seeds' model (Linear(10,50) -> ReLU -> Linear(50,1), MSE, Adam).

Every rank prints "restart=N" (TORCHELASTIC_RESTART_COUNT); with --fail-once, rank 1 exits 1
after its first epoch in the first attempt. At the end every rank checks that all replicas hold
the same parameters, and rank 0 prints "trained world=W epochs=E loss=L" and saves the model to
--out.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--samples", type=int, default=512)
    parser.add_argument("--out", default="")
    parser.add_argument("--fail-once", action="store_true")
    args = parser.parse_args(argv)
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    print(f"restart={restart}", flush=True)

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == int(os.environ["WORLD_SIZE"]) and rank == int(os.environ["RANK"])

    generator = torch.Generator().manual_seed(0)
    x = torch.rand(args.samples, 10, generator=generator) * 2 - 1
    y = x.sum(dim=1, keepdim=True) + 0.5 * torch.sin(3 * x[:, :1])
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=32, sampler=sampler)

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(10, 50), nn.ReLU(), nn.Linear(50, 1)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    loss = torch.tensor(0.0)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
        if args.fail_once and restart == 0 and rank == 1:
            sys.exit(1)

    # Every rank ends with the same parameters: DDP averaged the gradients.
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(g, gathered[0]) for g in gathered), "replicas diverged"
    if rank == 0:
        if args.out:
            torch.save(model.module.state_dict(), args.out)
        print(f"trained world={world} epochs={args.epochs} loss={loss.item():.6f}", flush=True)
    dist.destroy_process_group()
