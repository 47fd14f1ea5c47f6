"""An unmodified DDP script whose model is compiled by torch.compile (inductor, on the CPU: C++
kernels built with the machine's compiler), trained for --steps steps. Rank 0 prints
"weights DIGEST steps N compiled" at the end (ddp_setup.py)."""
import argparse

import torch
import torch.distributed as dist

from ddp_setup import ddp_model, weights_digest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    rank, model = ddp_model()
    compiled = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(args.steps):
        inputs = torch.randn(16, 10, generator=data)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(compiled(inputs), inputs.sum(1, keepdim=True)).backward()
        optimizer.step()
    if rank == 0:
        print("weights %s steps %d compiled" % (weights_digest(model.module), args.steps),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
