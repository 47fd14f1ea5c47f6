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
  ddp_alone        median DDP step (forward, backward, 1 MiB of gradients in one bucket) of
                   three models over a group of the rank alone, rank 0 stepping while rank 1
                   waits in a barrier (a rank with cores of its own; the other rank's pace on a
                   shared machine is noise):
                     uncounted  built over its own group, as if the hook were off
                     passed     built over the hook's counting group with its collectives
                                passed on uncounted: torch's C++-to-Python call alone, which
                                any Python-level count of a bucket pays
                     counted    built over the hook's counting group, as a script's model is:
                                the bucket's all-reduce counted, and waited for at the end of
                                the backward pass
                   (without the hook, all three are the same model)
  ddp_both         the same, both ranks stepping at once on this machine's cores
The models step in turn in the same process, so the machine's noise falls on each.
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


def passing_group(hook, group):
    """The hook's counting group around `group`, with its collectives passed on uncounted;
    `group` itself without the hook."""
    counting = hook._CountingGroups.around(group) if hook is not None else None
    if counting is None:
        return group

    class PassingOn(type(counting)):
        pass
    for name in hook._GROUP_COLLECTIVES:
        if hasattr(PassingOn, name):
            setattr(PassingOn, name, lambda self, *args, name=name, **kwargs:
                    getattr(self._ddprun_inner, name)(*args, **kwargs))
    return PassingOn(group)


def ddp_models(hook, group):
    """Three identical models of 262,144 parameters (1 MiB of gradients, one bucket) over
    `group`: uncounted (built by DDP's own initializer, which the hook's wraps), passed (the same
    over a counting group that passes its collectives on uncounted), and counted (built as the
    script would build it)."""
    models = {}
    for kind in ("uncounted", "passed", "counted"):
        torch.manual_seed(0)
        initialize = DistributedDataParallel.__init__
        model_group = group
        if kind != "counted":
            initialize = getattr(initialize, "__wrapped__", initialize)
        if kind == "passed":
            model_group = passing_group(hook, group)
        model = DistributedDataParallel.__new__(DistributedDataParallel)
        initialize(model, torch.nn.Linear(512, 512, bias=False), bucket_cap_mb=25,
                   process_group=model_group)
        model._ddprun_uncounted = kind != "counted"
        models[kind] = model
    return models


def step_times_us(models, inputs, stepping):
    """The median step of each model, where `stepping`; one step of each in turn, timed one by
    one (the medians of many single steps hold against the noise that batches of steps pick
    up), the order rotated each round so that each model follows each other as often."""
    times = {kind: [] for kind in models}
    order = list(models.items())
    dist.barrier()
    if stepping:
        for i in range(DDP_STEPS):
            for kind, model in order[i % len(order):] + order[:i % len(order)]:
                start = time.perf_counter()
                model(inputs).sum().backward()
                times[kind].append(time.perf_counter() - start)
    dist.barrier()
    return {kind: round(median_us(samples), 1) if samples else None
            for kind, samples in times.items()}


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
    # included, without waiting for the other rank.
    own_groups = [dist.new_group([r]) for r in range(dist.get_world_size())]
    models = ddp_models(hook, own_groups[dist.get_rank()])
    inputs = torch.randn(8, 512)
    for model in models.values():
        for _ in range(5):
            model(inputs).sum().backward()
    ddp_both = step_times_us(models, inputs, stepping=True)
    ddp_alone = step_times_us(models, inputs, stepping=dist.get_rank() == 0)
    result = {
        "hook": hook is not None,
        "buckets_counted": getattr(models["counted"].process_group, "_ddprun_inner",
                                   None) is not None,
        "allreduce_us": round(median_us(allreduce), 1),
        "wrapper_us": round(wrapper_cost_us(hook), 3),
        "ddp_us": round(ddp_cost_us(hook), 3),
        "ddp_alone": ddp_alone,
        "ddp_both": ddp_both,
    }
    if dist.get_rank() == 0:
        print(json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
