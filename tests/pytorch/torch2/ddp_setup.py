"""What the torch 2.x training scripts beside this file share: the process group and the DDP
model they train (the seeds' Linear(10,50), ReLU, Linear(50,1), the same start on every rank),
and the digest of its weights that they print to compare runs, bit for bit, so that the same
training under torchrun and under ddprun must give the same line."""
import hashlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def ddp_model():
    """(rank, model): the gloo process group formed from the launcher's environment, and the
    MLP, seeded, in DDP."""
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(10, 50), torch.nn.ReLU(), torch.nn.Linear(50, 1)))
    return dist.get_rank(), model


def weights_digest(model):
    """The SHA-256 of every parameter's bytes, in the model's order, as 16 hex digits."""
    digest = hashlib.sha256()
    for parameter in model.parameters():
        digest.update(parameter.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]
