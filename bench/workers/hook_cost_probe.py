"""What ddprun's Python hook costs a collective, measured inside one 2-rank gloo job.

Run under ddprun with --hang_timeout (the hook on) or under torchrun (no hook). Rank 0 prints
one JSON line:
  allreduce_us     median time of dist.all_reduce on 1 MiB of float32, as the script calls it
                   (counted by the hook when it is on)
  wrapper_us       the hook's own cost per c10d call: its counting wrapper around a collective
                   that does nothing, less that collective called bare (0 without the hook)
  ddp_plain_us     median DDP step (forward, backward, 1 MiB of gradients in one bucket) of a
                   model on DDP's own all-reduce
  ddp_counted_us   the same for a model whose buckets the hook counts (its communication hook);
                   equal to ddp_plain_us without the hook
Both DDP models step in turn in the same process, so the machine's noise falls on both.
"""
import json
import statistics
import sys
import time
import types

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

ROUNDS = 15


def median_us(samples):
    return statistics.median(samples) * 1e6


def per_call(function, calls):
    dist.barrier()
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls


def wrapper_cost_us(hook):
    """The counting wrapper on a no-op, against the no-op: the same loop, many calls."""
    if hook is None or not hasattr(hook, "_count_collectives"):
        return 0.0

    def nothing(*args, **kwargs):
        return None
    namespace = types.SimpleNamespace(all_reduce=nothing)
    hook._count_collectives(namespace)
    counted = namespace.all_reduce
    calls, bare, wrapped = 20000, [], []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            nothing(None)
        bare.append((time.perf_counter() - start) / calls)
        start = time.perf_counter()
        for _ in range(calls):
            counted(None)
        wrapped.append((time.perf_counter() - start) / calls)
    return max(0.0, median_us(wrapped) - median_us(bare))


def ddp_models():
    """Two identical models of 262,144 parameters (1 MiB of gradients, one bucket): the first
    keeps DDP's own all-reduce (the hook is told a hook is there), the second gets the hook's."""
    models = []
    for counted in (False, True):
        torch.manual_seed(0)
        model = DistributedDataParallel(torch.nn.Linear(512, 512, bias=False),
                                        bucket_cap_mb=25)
        if not counted:
            model._ddprun_comm_hook = True
        models.append(model)
    return models


def main():
    dist.init_process_group("gloo")
    hook = sys.modules.get("sitecustomize")
    if hook is not None and not hasattr(hook, "_count_collectives"):
        hook = None  # someone else's sitecustomize
    tensor = torch.ones(262144)
    allreduce = []
    for _ in range(3):
        per_call(lambda: dist.all_reduce(tensor), 10)  # warm up
    for _ in range(ROUNDS):
        allreduce.append(per_call(lambda: dist.all_reduce(tensor), 20))
    plain, counted = ddp_models()
    inputs = torch.randn(8, 512)
    times = {id(plain): [], id(counted): []}

    def step(model):
        model(inputs).sum().backward()
    for model in (plain, counted):
        for _ in range(5):
            step(model)
    for _ in range(ROUNDS):
        for model in (plain, counted):
            times[id(model)].append(per_call(lambda: step(model), 20))
    result = {
        "hook": hook is not None,
        "allreduce_us": round(median_us(allreduce), 1),
        "wrapper_us": round(wrapper_cost_us(hook), 3),
        "ddp_plain_us": round(median_us(times[id(plain)]), 1),
        "ddp_counted_us": round(median_us(times[id(counted)]), 1),
    }
    if dist.get_rank() == 0:
        print(json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
