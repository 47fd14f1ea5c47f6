"""What ddprun's Python hook (agent/python/sitecustomize.py, on with --hang_timeout or
--straggler_ratio) costs each collective of an unmodified PyTorch script, against a 2-rank gloo
all-reduce of 1 MiB. bench/workers/hook_cost_probe.py measures inside one job: the c10d
wrapper's own cost; a DDP step whose one bucket the hook counts (through its counting group)
against one it leaves uncounted and one whose bucket only passes through the counting group,
all in the same process, in turn: with rank 0 stepping alone (the headline: a rank with cores
of its own) and with both ranks stepping at once on this machine's cores; and the count of a
DDP forward, what the hook does instead where it cannot count buckets (a group not gloo's). It
runs under ddprun with the hook and under torchrun (no hook: its all-reduce is the anchor), in
interleaved runs; medians, with the spread.

Usage: /usr/bin/python3 bench/python_hook_cost.py [RUNS]
"""
import json
import os
import subprocess
import sys

from common import DDPRUN, PYTHON, ROOT, TORCHRUN, median, require

PROBE = os.path.join(ROOT, "bench", "workers", "hook_cost_probe.py")
ARGS = ["--standalone", "--nproc_per_node=2", PROBE]
LAUNCHERS = {
    "ddprun": [DDPRUN, "--hang_timeout=600"] + ARGS,
    "torchrun": TORCHRUN + ARGS,
}


def one_run(command):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PATH=os.path.dirname(PYTHON) + ":" + os.environ.get("PATH", ""))
    out = subprocess.run(command, check=True, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    for line in out.splitlines():
        start = line.find("{")
        if start >= 0:
            return json.loads(line[start:])
    sys.exit(f"bench: {command[0]} printed no result")


def spread(values):
    return f"(min {min(values):.1f}, max {max(values):.1f}, n={len(values)})"


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    require(DDPRUN, "ddprun")
    results = {name: [] for name in LAUNCHERS}
    for _ in range(runs):
        for name, command in LAUNCHERS.items():
            results[name].append(one_run(command))
    if not all(r["hook"] and r["buckets_counted"] for r in results["ddprun"]):
        sys.exit("bench: the hook was not on, or did not count DDP's buckets, under ddprun "
                 "--hang_timeout")
    for name in LAUNCHERS:
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


if __name__ == "__main__":
    main()
