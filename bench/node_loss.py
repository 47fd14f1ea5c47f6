"""Node-loss detection: three agents on loopback (--nnodes=2:3, one worker each) run a job;
one agent is killed with SIGKILL; measured from the kill to the first worker of the survivors'
new round. With the default heartbeat_timeout (3 s) and with heartbeat_timeout=1. (The killed agent's stream ends at once; the
server waits a 1 s reconnect grace before it declares the node lost.)

torchrun cannot run this case to the end: its agents learn of a lost node only when their own
workers fail (a collective times out), and these workers run no collective.

Usage: /usr/bin/python3 bench/node_loss.py [RUNS]
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

from common import (DDPRUN, ROOT, median, read_times, require, unshared_loopback_endpoint,
                    wait_for)

WORKER = os.path.join(ROOT, "bench", "workers", "record_world.sh")


def one_detection(heartbeat_timeout):
    with tempfile.TemporaryDirectory(prefix="ddprun_loss_") as probe_dir:
        env = dict(os.environ, PROBE_DIR=probe_dir, DONE_WORLD="2")
        endpoint = unshared_loopback_endpoint()
        conf = "last_call_timeout=0.5"
        if heartbeat_timeout:
            conf += f",heartbeat_timeout={heartbeat_timeout}"
        args = ["--nnodes=2:3", "--nproc_per_node=1", f"--rdzv_endpoint={endpoint}",
                "--rdzv_id=loss-bench", f"--rdzv_conf={conf}", "--no_python", WORKER]
        agents = []
        for _ in range(3):
            agents.append(subprocess.Popen([DDPRUN] + args, env=env, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))
            if len(agents) == 1:
                time.sleep(0.2)  # the first agent hosts the rendezvous
        wait_for(os.path.join(probe_dir, "start.3.*"), 3)
        victim = agents[2]
        killed = time.time()
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        for agent in agents[:2]:
            if agent.wait(timeout=120) != 0:
                sys.exit(f"bench: a surviving agent exited {agent.returncode}")
        starts = read_times(os.path.join(probe_dir, "start.2.*"))
        if len(starts) != 2:
            sys.exit(f"bench: expected 2 workers in the new round, saw {len(starts)}")
        return min(starts) - killed


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    require(DDPRUN, "ddprun")
    for heartbeat_timeout in (None, 1):
        name = "default (3 s)" if heartbeat_timeout is None else f"{heartbeat_timeout} s"
        seconds = [one_detection(heartbeat_timeout) for _ in range(runs)]
        print(f"heartbeat_timeout {name:13s}: kill -9 -> survivors' new round median "
              f"{median(seconds) * 1000:7.0f} ms (min {min(seconds) * 1000:.0f}, "
              f"max {max(seconds) * 1000:.0f}, n={runs})")


if __name__ == "__main__":
    main()
