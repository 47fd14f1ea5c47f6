"""What ddprun's Python hook (agent/python/sitecustomize.py, on with --hang_timeout or
--straggler_ratio) costs each collective of an unmodified PyTorch script, against a 2-rank gloo
all-reduce of 1 MiB. bench/workers/hook_cost_probe.py measures inside one job: the c10d
wrapper's own cost; a DDP step whose one bucket the hook counts (through its counting group)
against one it leaves uncounted and one whose bucket only passes through the counting group,
all in the same process, in turn: with rank 0 stepping alone (the headline: a rank with cores
of its own) and with both ranks stepping at once on this machine's cores; and the count of a
DDP forward, what the hook does instead where it cannot count buckets (a group not gloo's). It
runs under ddprun with the hook and under torchrun (no hook: its all-reduce is the anchor), in
interleaved runs, under the pinned torch 2.x (tests/pytorch/torch_pin.txt, its own torchrun) and
Debian's 1.13; medians, with the spread.

Usage: /usr/bin/python3 bench/python_hook_cost.py [RUNS]
"""
import json
import os
import subprocess
import sys

from common import (DDPRUN, PYTHON, ROOT, TORCHRUN, median, path_with, require, torch2_python,
                    torchrun2)

PROBE = os.path.join(ROOT, "bench", "workers", "hook_cost_probe.py")
ARGS = ["--standalone", "--nproc_per_node=2", PROBE]


def launchers(torch2):
    """name -> (command, the interpreter its workers run under), for each torch."""
    return {
        "2.x": {"ddprun": ([DDPRUN, "--hang_timeout=600"] + ARGS, torch2),
                "torchrun": (torchrun2(torch2) + ARGS, torch2)},
        "1.13": {"ddprun": ([DDPRUN, "--hang_timeout=600"] + ARGS, PYTHON),
                 "torchrun": (TORCHRUN + ARGS, PYTHON)},
    }


def one_run(command, python):
    env = dict(path_with(python), OMP_NUM_THREADS="1")
    out = subprocess.run(command, check=True, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    for line in out.splitlines():
        start = line.find("{")
        if start >= 0:
            return json.loads(line[start:])
    sys.exit(f"bench: {command[0]} printed no result")


def spread(values):
    return f"(min {min(values):.1f}, max {max(values):.1f}, n={len(values)})"


def report(torch, results):
    """Prints one torch's lines from its runs' results."""
    print(f"torch {torch}:")
    if not all(r["hook"] and r["buckets_counted"] for r in results["ddprun"]):
        sys.exit("bench: the hook was not on, or did not count DDP's buckets, under ddprun "
                 "--hang_timeout")
    for name in results:
        values = [r["allreduce_us"] for r in results[name]]
        print(f"{name:9s} all_reduce 1 MiB, 2 ranks, gloo: median {median(values):8.1f} us   "
              f"{spread(values)}{'  (counted by the hook)' if name == 'ddprun' else ''}")
    ours = results["ddprun"]
    wrapper = [r["wrapper_us"] for r in ours]
    ddp_own = [r["ddp_us"] for r in ours]
    print(f"hook      c10d wrapper per call:        median {median(wrapper):8.3f} us   "
          f"{spread(wrapper)}")
    print(f"hook      DDP forward counted (no bucket count): median {median(ddp_own):8.3f} us   "
          f"{spread(ddp_own)}")
    bucket = {}
    for phase, label in (("ddp_alone", "rank 0 stepping alone"),
                         ("ddp_both", "both ranks stepping")):
        uncounted = [r[phase]["uncounted"] for r in ours]
        counted = [r[phase]["counted"] - r[phase]["uncounted"] for r in ours]
        passed = [r[phase]["passed"] - r[phase]["uncounted"] for r in ours]
        bucket[phase] = median(counted)
        print(f"hook      DDP step, {label}: uncounted median {median(uncounted):.1f} us "
              f"{spread(uncounted)}")
        print(f"hook        its 1 bucket counted:      {median(counted):+8.1f} us   "
              f"{spread(counted)}")
        print(f"hook        of that, passing the call through Python uncounted: "
              f"{median(passed):+.1f} us   {spread(passed)}")
    anchor = median([r["allreduce_us"] for r in results["torchrun"]])
    print(f"ratio     of torchrun's 1 MiB all_reduce: c10d wrapper "
          f"{100 * median(wrapper) / anchor:.2f}%, a DDP bucket counted "
          f"{100 * bucket['ddp_alone'] / anchor:+.2f}% (target < 1%; both ranks stepping "
          f"{100 * bucket['ddp_both'] / anchor:+.2f}%); a forward counted where buckets are "
          f"not, {100 * median(ddp_own) / anchor:.2f}%")



def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    require(DDPRUN, "ddprun")
    torches = launchers(torch2_python())
    results = {torch: {name: [] for name in commands} for torch, commands in torches.items()}
    for _ in range(runs):
        for torch, commands in torches.items():
            for name, (command, python) in commands.items():
                results[torch][name].append(one_run(command, python))
    for torch in torches:
        report(torch, results[torch])

if __name__ == "__main__":
    main()
