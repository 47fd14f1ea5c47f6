"""Multi-node restart latency: two agents on loopback, 2 workers each, rank 1 fails once
(bench/workers/restart_probe.sh): from the failure to the last worker restarted on either node,
ddprun beside the one-node floor of a restart of 4 (bench/spawn_floor.c) and beside torchrun
2.x (the pinned torch's) and 1.13 (Debian's), c10d rendezvous, in the same run. With --etcd (Debian's etcd-server), also the same job at two
`ddprund --store=etcd` on a 3-member etcd, the agents given both daemons (issue 29's goal: under
50 ms).

Usage: /usr/bin/python3 bench/multinode_restart.py [RUNS] [--etcd]
"""
import itertools
import os
import subprocess
import sys
import tempfile

from common import (DDPRUN, PROBE, SPAWN_FLOOR, TORCHRUN, one_restart, probe_restart_latency,
                    report_ms, require, torch2_python, torchrun2, unshared_loopback_endpoint)
from etcd_daemons import EtcdMembers, require_etcd_daemons, start_daemon, stop_job


_runs = itertools.count()  # a job id per run: daemons keep an ended job's id for a while


def one_latency(launcher, extra, endpoint=None):
    """`endpoint`: the rendezvous the agents are given; by default one of them hosts it."""
    with tempfile.TemporaryDirectory(prefix="ddprun_probe_") as probe_dir:
        env = dict(os.environ, PROBE_DIR=probe_dir)
        endpoint = endpoint or unshared_loopback_endpoint()
        args = ["--nnodes=2", "--nproc_per_node=2", f"--rdzv_endpoint={endpoint}",
                f"--rdzv_id=restart-bench-{next(_runs)}", "--max_restarts=1"]
        args += extra + ["--no_python", PROBE]
        agents = [subprocess.Popen(launcher + args, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) for _ in range(2)]
        for agent in agents:
            if agent.wait(timeout=300) != 0:
                sys.exit(f"bench: an agent exited {agent.returncode}")
        return probe_restart_latency(probe_dir, 4)


def measure(name, launcher, extra, runs, endpoint=None):
    latencies = [one_latency(launcher, extra, endpoint) for _ in range(runs)]
    return report_ms(name, "2-node restart latency", latencies)


def measure_on_etcd(runs):
    """The restart with the job's rounds at one of two daemons on a 3-member etcd."""
    require_etcd_daemons()
    with EtcdMembers(3) as etcd:
        daemons = [start_daemon(etcd.endpoints) for _ in range(2)]
        try:
            return measure("ddprun, daemons on etcd", [DDPRUN], [], runs,
                           ",".join(endpoint for _, endpoint in daemons))
        finally:
            stop_job([], daemons)


def main():
    arguments = [a for a in sys.argv[1:] if a != "--etcd"]
    runs = int(arguments[0]) if arguments else 10
    require(DDPRUN, "ddprun")
    require(SPAWN_FLOOR, "spawn-floor (bench/spawn_floor.c)")
    floor = report_ms("floor", "1-node restart of 4",
                      [one_restart([SPAWN_FLOOR, "restart", "4", PROBE]) for _ in range(runs)])
    ddp = measure("ddprun", [DDPRUN], [], runs)
    print(f"ratio     ddprun is {ddp / floor:.2f}x the one-node floor (target: at most 15 ms)")
    if "--etcd" in sys.argv[1:]:
        on_etcd = measure_on_etcd(runs)
        print(f"ratio     on etcd {on_etcd / ddp:.2f}x the agent-hosted rendezvous "
              f"(target: under 50 ms)")
    for name, torchrun in (("torchrun 2.x", torchrun2(torch2_python())),
                           ("torchrun 1.13", TORCHRUN + ["--monitor_interval=0.1"])):
        theirs = measure(name, torchrun, ["--rdzv_backend=c10d"], max(3, runs // 2))
        print(f"ratio     ddprun restarts {theirs / ddp:.1f}x faster than {name}")

if __name__ == "__main__":
    main()
