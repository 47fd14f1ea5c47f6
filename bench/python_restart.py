"""Restart of an ordinary PyTorch DDP script (bench/workers/ddp_restart_probe.py: gloo, 2 ranks,
a small MLP; rank 1 fails at step 20 of the first attempt): the time from the failure to every
rank's first DDP step of the second attempt (init_process_group and DDP's broadcast included),
and from the launch to every rank's first step of the first attempt. ddprun with
--python_preload=torch (warm workers), ddprun without it, and torchrun (2.x's also with a store
of its own for each attempt, UNSHARED_STORE below), in interleaved runs,
under two torches: the pinned 2.x (tests/pytorch/torch_pin.txt, with its own torchrun) and
Debian's 1.13; medians, with the spread.

Usage: /usr/bin/python3 bench/python_restart.py [RUNS]
"""
import os
import sys
import tempfile
import time

from common import (DDPRUN, PYTHON, ROOT, TORCHRUN, median, path_with, read_times, report_ms,
                    require, run_bounded, torch2_python, torchrun2)

SCRIPT = os.path.join(ROOT, "bench", "workers", "ddp_restart_probe.py")
ARGS = ["--standalone", "--nproc_per_node=2", "--max_restarts=1", SCRIPT]


# torchrun 2.x's agent serves its workers' store from one server for the whole job, and its
# workers' keys carry no attempt: a second attempt's gloo can read the first attempt's addresses
# and connect to a rank that is gone (refused, or waiting for ever). torch's own switch,
# TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, gives every attempt a store of its own, as torch 2.3 and
# earlier did; a user whose restarts fail so would set it. bench/RESULTS.md, 2026-12-07.
UNSHARED_STORE = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}


def launchers(torch2):
    """name -> (command, the interpreter its workers run under, variables of its own)."""
    return {
        "2.x warm": ([DDPRUN, "--python_preload=torch"] + ARGS, torch2, {}),
        "2.x ddprun": ([DDPRUN] + ARGS, torch2, {}),
        "2.x torchrun": (torchrun2(torch2) + ARGS, torch2, {}),
        "2.x torchrun, unshared store": (torchrun2(torch2) + ARGS, torch2, UNSHARED_STORE),
        "1.13 warm": ([DDPRUN, "--python_preload=torch"] + ARGS, PYTHON, {}),
        "1.13 ddprun": ([DDPRUN] + ARGS, PYTHON, {}),
        # torchrun's default monitor_interval is 5 s in 1.13; 0.1 s is the default since 2.4.
        "1.13 torchrun": (TORCHRUN + ["--monitor_interval=0.1"] + ARGS, PYTHON, {}),
    }


# A run's bound: a run that gets through takes 5-15 s here.
HUNG_AFTER_S = 60
# Runs that did not get through (a non-zero exit, or no end in HUNG_AFTER_S), by launcher and how.
LOST = {}


def one_run(name, command, python, variables):
    """(first start, restart) in seconds of one run of command; None, counted in LOST, when the
    run did not get through."""
    with tempfile.TemporaryDirectory(prefix="ddprun_python_restart_") as probe:
        env = dict(path_with(python), PROBE_DIR=probe, OMP_NUM_THREADS="1", **variables)
        launched = time.time()
        outcome = run_bounded(command, env, HUNG_AFTER_S)
        if outcome != "ok":
            LOST.setdefault(name, []).append(outcome)
            return None
        first = read_times(os.path.join(probe, "step.0.*"))
        second = read_times(os.path.join(probe, "step.1.*"))
        (failed,) = read_times(os.path.join(probe, "fail"))
        if len(first) != 2 or len(second) != 2:
            sys.exit(f"bench: {command[0]} ran {len(first)} and {len(second)} first steps, not 2")
        return max(first) - launched, max(second) - failed


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    require(DDPRUN, "ddprun")
    commands = launchers(torch2_python())
    starts = {name: [] for name in commands}
    restarts = {name: [] for name in commands}
    # Interleaved rounds until every launcher has `runs` runs, or has lost as many as that.
    while any(len(restarts[name]) < runs and len(LOST.get(name, [])) < runs
              for name in commands):
        for name, (command, python, variables) in commands.items():
            if len(restarts[name]) >= runs or len(LOST.get(name, [])) >= runs:
                continue
            measured = one_run(name, command, python, variables)
            if measured is not None:
                starts[name].append(measured[0])
                restarts[name].append(measured[1])
    for name, outcomes in LOST.items():
        print(f"lost      {name}: {outcomes.count('failed')} run(s) failed, "
              f"{outcomes.count('hung')} hung past {HUNG_AFTER_S} s, against {len(restarts[name])} that "
              "got through")
    measured = [name for name in commands if restarts[name]]
    for name in measured:
        report_ms(name, "first step of the first attempt", starts[name])
    for name in measured:
        report_ms(name, "restart to every rank's first step", restarts[name])
    for torch in ("2.x", "1.13"):
        warm, cold = f"{torch} warm", f"{torch} ddprun"
        if not restarts[warm] or not restarts[cold]:
            continue
        for torchrun in (name for name in commands if name.startswith(f"{torch} torchrun")):
            against = (f"{median(restarts[torchrun]) / median(restarts[warm]):.1f}x faster than "
                       "its" if restarts[torchrun] else "it got through no restart")
            print(f"ratio     {torchrun}: the warm restart is {against} (target >= 10x, under "
                  "300 ms)")
        print(f"ratio     torch {torch}: the warm restart is "
              f"{median(restarts[cold]) / median(restarts[warm]):.1f}x faster than ddprun's "
              "without the preload")
        print(f"ratio     torch {torch}: warm first start is "
              f"{median(starts[warm]) / median(starts[cold]):.2f}x ddprun's without the preload "
              "(target: no slower)")


if __name__ == "__main__":
    main()
