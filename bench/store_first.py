"""How long an unmodified 2-rank DDP script's init_process_group takes (gloo, env://) under each
launcher, start after start: tests/pytorch/store_first.py, one DDP step, run RUNS times by each
launcher in interleaved rounds, under the pinned torch 2.x and Debian's 1.13. Where a launcher
leaves rank 0 to host PyTorch's store, a rank that connects before it listens retries a second
later (the coin-toss second of issue 52); where the launcher serves the store itself
(TORCHELASTIC_USE_AGENT_STORE=True: ddprun on one node, torchrun 2.x) no rank waits for it.

Prints, for each launcher, per start: the slowest rank's time in init_process_group, and the time
from the last rank's call to the group's forming (the first also holds a rank's wait for another
still importing torch); how many starts had the slowest over 0.3 s and over 1 s; and the launch
to the script's end.

Usage: /usr/bin/python3 bench/store_first.py [RUNS]
"""
import os
import re
import subprocess
import sys
import time

from common import DDPRUN, PYTHON, ROOT, TORCHRUN, median, path_with, require, torch2_python, torchrun2

SCRIPT = os.path.join(ROOT, "tests", "pytorch", "store_first.py")
ARGS = ["--standalone", "--nproc_per_node=2", SCRIPT]
INIT = re.compile(r"init attempt=\d+ seconds=([0-9.]+) entered=([0-9.]+) left=([0-9.]+) store=(agent|rank0)")
# A run takes 2-6 s here. (torchrun prefixes no line: its two ranks' lines may share one, so the
# lines are found anywhere in the output.)
BOUND_S = 120
# Runs that failed, by launcher: torch 2.15's ranks now and then abort as they exit ("terminate
# called without an active exception"), under torchrun 2.15 too (bench/RESULTS.md, 2026-12-07).
LOST = {}


def launchers(torch2):
    """name -> (command, the interpreter its workers run under)."""
    return {
        "2.x ddprun": ([DDPRUN] + ARGS, torch2),
        "2.x warm": ([DDPRUN, "--python_preload=torch"] + ARGS, torch2),
        "2.x torchrun": (torchrun2(torch2) + ARGS, torch2),
        "1.13 ddprun": ([DDPRUN] + ARGS, PYTHON),
        "1.13 warm": ([DDPRUN, "--python_preload=torch"] + ARGS, PYTHON),
        "1.13 torchrun": (TORCHRUN + ["--monitor_interval=0.1"] + ARGS, PYTHON),
    }


def one_run(name, command, python):
    """(the slowest rank's init_process_group, the last rank's call to the group's forming, the
    run's wall time, the store it used); None, the run's end counted in LOST, when it failed."""
    started = time.perf_counter()
    done = subprocess.run(command, env=dict(path_with(python), OMP_NUM_THREADS="1"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=BOUND_S)
    wall = time.perf_counter() - started
    inits = INIT.findall(done.stdout)
    if done.returncode != 0 or len(inits) != 2:
        aborted = "terminate called without an active exception" in done.stdout
        LOST.setdefault(name, []).append(
            f"exit {done.returncode}, {len(inits)} init lines" + (", SIGABRT at exit" if aborted else ""))
        return None
    slowest = max(float(seconds) for seconds, _, _, _ in inits)
    meeting = max(float(left) for _, _, left, _ in inits) - max(float(e) for _, e, _, _ in inits)
    return slowest, meeting, wall, inits[0][3]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    require(DDPRUN, "ddprun")
    commands = launchers(torch2_python())
    inits = {name: [] for name in commands}
    meetings = {name: [] for name in commands}
    walls = {name: [] for name in commands}
    stores = {}
    for _ in range(runs):
        for name, (command, python) in commands.items():
            measured = one_run(name, command, python)
            if measured is None:
                continue
            init, meeting, wall, stores[name] = measured
            inits[name].append(init)
            meetings[name].append(meeting)
            walls[name].append(wall)
    for name, ends in LOST.items():
        print(f"lost           {name}: {len(ends)} run(s): {'; '.join(ends)}")
    for name in (name for name in commands if inits[name]):
        seconds, meeting = inits[name], meetings[name]
        print(f"{name:14s} store={stores[name]:5s} init_process_group median "
              f"{median(seconds) * 1000:6.1f} ms (min {min(seconds) * 1000:.1f}, max "
              f"{max(seconds) * 1000:.1f}); last arrival to the group median "
              f"{median(meeting) * 1000:.1f} ms (max {max(meeting) * 1000:.1f}); over 0.3 s: {sum(s > 0.3 for s in seconds)} of "
              f"{len(seconds)}, over 1 s: {sum(s > 1 for s in seconds)}; launch to end median "
              f"{median(walls[name]):.2f} s (min {min(walls[name]):.2f}, max {max(walls[name]):.2f})")


if __name__ == "__main__":
    main()
