"""An ordinary DDP training script (gloo, a small model, SGD), with no line for ddprun: what
the hang and straggler tests run. Its options make one rank misbehave in the first attempt
(TORCHELASTIC_RESTART_COUNT 0), as a real bug would:

  --hang sleep        rank --rank_at_fault sleeps at step --at (stuck in user code while the
                      others wait in DDP's all-reduce)
  --hang after_backward  rank --rank_at_fault stops at step --at between its backward and its
                      optimizer step (clipping, logging), while the others wait in the next
                      backward's all-reduce
  --hang skip         at step --at every rank all-reduces its loss for logging, except rank
                      --rank_at_fault, which waits for an event that never comes (a stuck data
                      loader) and so never enters the collective the others wait in
  --step_seconds S    every rank sleeps S a step (loading data)
  --slow_seconds S    rank --rank_at_fault sleeps S more a step, in steps before --at
  --print_weights     rank 0 prints the trained weights' sum, for comparing runs
  --linger_seconds S  every rank stays S after destroying its process group (a last checkpoint)

Prints "done N steps" on every rank at the end.
"""
import argparse
import os
import threading
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--hang", choices=["none", "sleep", "after_backward", "skip"], default="none")
    parser.add_argument("--rank_at_fault", type=int, default=1)
    parser.add_argument("--at", type=int, default=50)
    parser.add_argument("--step_seconds", type=float, default=0.0)
    parser.add_argument("--slow_seconds", type=float, default=0.0)
    parser.add_argument("--print_weights", action="store_true")
    parser.add_argument("--linger_seconds", type=float, default=0.0)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    at_fault = first_attempt and rank == args.rank_at_fault
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        if at_fault and step == args.at and args.hang == "sleep":
            time.sleep(3600)
        inputs = torch.randn(8, 16, generator=generator)
        loss = model(inputs).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        if at_fault and step == args.at and args.hang == "after_backward":
            time.sleep(3600)
        optimizer.step()
        if step == args.at and args.hang == "skip":
            if at_fault:
                threading.Event().wait()
            logged = loss.detach().clone()
            dist.all_reduce(logged)
        if args.step_seconds:
            time.sleep(args.step_seconds)
        if args.slow_seconds and rank == args.rank_at_fault and step < args.at:
            time.sleep(args.slow_seconds)
    if args.print_weights and rank == 0:
        total = sum(float(p.detach().double().sum()) for p in model.parameters())
        print("weights %.12f" % total, flush=True)
    print("done %d steps" % args.steps, flush=True)
    dist.destroy_process_group()
    time.sleep(args.linger_seconds)


if __name__ == "__main__":
    main()
