"""Restart latency on one node, 4 workers, rank 1 fails once (bench/workers/restart_probe.sh):
from the failure to the last worker restarted, ddprun beside the machine's floor
(bench/spawn_floor.c restart: waits for the failure, stops the others, starts 4 again) in
interleaved runs, and beside torchrun 2.x (the pinned torch's) and 1.13 (Debian's).

Usage: /usr/bin/python3 bench/restart_latency.py [RUNS]
"""
import sys

from common import (DDPRUN, PROBE, SPAWN_FLOOR, TORCHRUN, median, one_restart, report_ms,
                    require, torch2_python, torchrun2)

ARGS = ["--standalone", "--nproc_per_node=4", "--max_restarts=1", "--no_python", PROBE]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    require(DDPRUN, "ddprun")
    require(SPAWN_FLOOR, "spawn-floor (bench/spawn_floor.c)")
    floor, ddprun = [], []
    for _ in range(runs):
        floor.append(one_restart([SPAWN_FLOOR, "restart", "4", PROBE]))
        ddprun.append(one_restart([DDPRUN] + ARGS))
    report_ms("floor", "restart latency", floor)
    ddp = report_ms("ddprun", "restart latency", ddprun)
    print(f"ratio     ddprun is {ddp / median(floor):.2f}x the floor (target: at most 12 ms)")
    for name, torchrun in (("torchrun 2.x", torchrun2(torch2_python())),
                           ("torchrun 1.13", TORCHRUN + ["--monitor_interval=0.1"])):
        theirs = report_ms(name, "restart latency",
                           [one_restart(torchrun + ARGS) for _ in range(max(3, runs // 2))])
        print(f"ratio     ddprun restarts {theirs / ddp:.1f}x faster than {name} "
              "(target >= 10x)")

if __name__ == "__main__":
    main()
