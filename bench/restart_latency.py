"""Restart latency on one node, 4 workers, rank 1 fails once (the anchor's restart_probe.sh):
from the failure to the last worker restarted, ddprun beside torchrun.

Usage: /usr/bin/python3 bench/restart_latency.py [RUNS]
"""
import os
import sys
import tempfile

from common import (ANCHORS, DDPRUN, TORCHRUN, probe_restart_latency, report_ms, require,
                    wall_seconds)

PROBE = os.path.join(ANCHORS, "restart_probe.sh")
ARGS = ["--standalone", "--nproc_per_node=4", "--max_restarts=1", "--no_python", PROBE]


def one_latency(command):
    with tempfile.TemporaryDirectory(prefix="ddprun_probe_") as probe_dir:
        env = dict(os.environ, PROBE_DIR=probe_dir)
        wall_seconds(command, env)
        return probe_restart_latency(probe_dir, 4)


def measure(name, command, runs):
    return report_ms(name, "restart latency", [one_latency(command) for _ in range(runs)])


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    require(DDPRUN, "ddprun")
    require(PROBE, "the anchor's restart_probe.sh")
    ddp = measure("ddprun", [DDPRUN] + ARGS, runs)
    torchrun = measure("torchrun", TORCHRUN + ["--monitor_interval=0.1"] + ARGS, max(3, runs // 2))
    print(f"ratio     ddprun restarts {torchrun / ddp:.1f}x faster (target >= 10x)")


if __name__ == "__main__":
    main()
