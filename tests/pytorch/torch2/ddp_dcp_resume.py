"""An unmodified DDP script that saves a distributed checkpoint (torch.distributed.checkpoint)
every --every steps into --checkpoint_dir/step-N, and at its start resumes from the latest one
there: model and optimizer state through torch.distributed.checkpoint.state_dict, the step in
the checkpoint. Step S's batch depends only on S and the rank, so a run killed and resumed
computes what an uninterrupted one does.

With --kill_at S, rank 1 of the first attempt (TORCHELASTIC_RESTART_COUNT 0) kills itself with
SIGKILL at step S, as the machine's OOM killer would. Each rank prints "resumed at step N" when it
loads a checkpoint; rank 0 prints "weights DIGEST steps N" at the end (ddp_setup.py)."""
import argparse
import os
import signal

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from ddp_setup import ddp_model, weights_digest


def latest_checkpoint(directory):
    """(step, path) of the newest complete checkpoint in directory, or (0, None)."""
    steps = []
    for name in os.listdir(directory) if os.path.isdir(directory) else []:
        path = os.path.join(directory, name)
        if name.startswith("step-") and os.path.exists(os.path.join(path, ".metadata")):
            steps.append((int(name[len("step-"):]), path))
    return max(steps) if steps else (0, None)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--every", type=int, default=4)
    parser.add_argument("--checkpoint_dir", required=True)
    parser.add_argument("--kill_at", type=int, default=-1)
    args = parser.parse_args()
    rank, model = ddp_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    start, path = latest_checkpoint(args.checkpoint_dir)
    if path is not None:
        # get_state_dict gives a fresh optimizer its state (a step at lr 0) to load into.
        model_state, optimizer_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optimizer": optimizer_state}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(model, optimizer, model_state_dict=state["model"],
                       optim_state_dict=state["optimizer"])
        print("resumed at step %d" % start, flush=True)
    first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    for step in range(start, args.steps):
        if first_attempt and rank == 1 and step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        data = torch.Generator().manual_seed(1000 * step + rank)
        inputs = torch.randn(16, 10, generator=data)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(inputs), inputs.sum(1, keepdim=True)).backward()
        optimizer.step()
        if (step + 1) % args.every == 0:
            model_state, optimizer_state = get_state_dict(model, optimizer)
            dcp.save({"model": model_state, "optimizer": optimizer_state},
                     checkpoint_id=os.path.join(args.checkpoint_dir, "step-%d" % (step + 1)))
    if rank == 0:
        print("weights %s steps %d" % (weights_digest(model.module), args.steps), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
