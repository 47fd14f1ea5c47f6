"""An unmodified DDP script that accumulates gradients over --micro micro-batches a step, the
first ones under model.no_sync() (no all-reduce), the last one synchronized, as the DDP
documentation shows. Rank 0 prints "weights DIGEST steps N" at the end (ddp_setup.py)."""
import argparse

import torch
import torch.distributed as dist

from ddp_setup import ddp_model, weights_digest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--micro", type=int, default=4)
    args = parser.parse_args()
    rank, model = ddp_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(args.steps):
        optimizer.zero_grad()
        for micro in range(args.micro):
            inputs = torch.randn(16, 10, generator=data)
            loss = torch.nn.functional.mse_loss(model(inputs), inputs.sum(1, keepdim=True))
            if micro < args.micro - 1:
                with model.no_sync():
                    (loss / args.micro).backward()
            else:
                (loss / args.micro).backward()
        optimizer.step()
    if rank == 0:
        print("weights %s steps %d" % (weights_digest(model.module), args.steps), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
