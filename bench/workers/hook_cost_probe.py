"""What ddprun's Python hook costs a collective, measured inside one 2-rank gloo job.

Run under ddprun with --hang_timeout (the hook on) or under torchrun (no hook). Rank 0 prints
one JSON line:
  buckets_counted  whether the counted model's bucket all-reduces go through the hook's counting
                   group
  allreduce_us     median time of dist.all_reduce on 1 MiB of float32, as the script calls it
                   (counted by the hook when it is on)
  wrapper_us       the hook's own cost per c10d call: its counting wrapper around a collective
                   that does nothing, less that collective called bare (0 without the hook)
  ddp_us           the hook's own cost per DDP forward where it cannot count DDP's buckets (a
                   group not gloo's): the forward's count and the step's close, less a call that
                   does nothing (0 without the hook)
  ddp_uncounted_us median DDP step (forward, backward, 1 MiB of gradients in one bucket) of a
                   model built over its own group, as if the hook were off, over a group of the
                   rank alone (the step's own cost, without the wait for the other rank)
  ddp_counted_us   the same for a model built over the hook's counting group (without the
                   hook, the same model again): one bucket's all-reduce counted, through torch's
                   C++-to-Python call, the count and the wait on the hook's thread; the
                   difference is what counting a bucket costs
Both models step in turn in the same process, so the machine's noise falls on both.
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
DDP_STEPS = 500


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


def ddp_cost_us(hook):
    """What the hook adds to a DDP forward it counts (a model whose buckets it cannot count):
    the last backward closed, this one opened, against nothing; many calls."""
    if hook is None or not hasattr(hook, "_Progress"):
        return 0.0
    progress = hook._Progress

    def counted():
        progress.ddp_forward()

    def nothing():
        return None
    calls, bare, wrapped = 20000, [], []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            nothing()
        bare.append((time.perf_counter() - start) / calls)
        start = time.perf_counter()
        for _ in range(calls):
            counted()
        wrapped.append((time.perf_counter() - start) / calls)
    return max(0.0, median_us(wrapped) - median_us(bare))


def ddp_models(group):
    """Two identical models of 262,144 parameters (1 MiB of gradients, one bucket) over
    `group`: one built by DDP's own initializer (the hook's wraps it) and left uncounted, one
    built as the script would build it, whose bucket the hook counts (the same without the
    hook)."""
    models = {}
    for kind in ("uncounted", "counted"):
        torch.manual_seed(0)
        initialize = DistributedDataParallel.__init__
        if kind == "uncounted":
            initialize = getattr(initialize, "__wrapped__", initialize)
        model = DistributedDataParallel.__new__(DistributedDataParallel)
        initialize(model, torch.nn.Linear(512, 512, bias=False), bucket_cap_mb=25,
                   process_group=group)
        model._ddprun_uncounted = kind == "uncounted"
        models[kind] = model
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
    # Each rank's DDP models over a group of its own: what a step costs it, the hook's work
    # included, without waiting for the other rank (whose pace, on a shared machine, is noise).
    own_groups = [dist.new_group([r]) for r in range(dist.get_world_size())]
    models = ddp_models(own_groups[dist.get_rank()])
    inputs = torch.randn(8, 512)
    times = {kind: [] for kind in models}

    def step(model):
        model(inputs).sum().backward()
    for model in models.values():
        for _ in range(5):
            step(model)
    # One step of each in turn, timed one by one: the medians of many single steps hold against
    # the noise that whole batches of steps pick up.
    dist.barrier()
    order = list(models.items())
    for i in range(DDP_STEPS):
        for kind, model in (order if i % 2 else order[::-1]):  # each first half the time
            start = time.perf_counter()
            step(model)
            times[kind].append(time.perf_counter() - start)
    result = {
        "hook": hook is not None,
        "buckets_counted": getattr(models["counted"].process_group, "_ddprun_inner",
                                   None) is not None,
        "allreduce_us": round(median_us(allreduce), 1),
        "wrapper_us": round(wrapper_cost_us(hook), 3),
        "ddp_us": round(ddp_cost_us(hook), 3),
        "ddp_uncounted_us": round(median_us(times["uncounted"]), 1),
        "ddp_counted_us": round(median_us(times["counted"]), 1),
    }
    if dist.get_rank() == 0:
        print(json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
