"""Agents on etcd without daemons (`--rdzv_backend=etcd-v3`): a job outlives the agent whose
server runs its rounds. A 3-member etcd (Debian's etcd-server) and three agents of 2 workers on
loopback in an elastic job (`--nnodes=2:3`), default rendezvous timeouts; the agent that leads
the job (it says so at log level info) is killed with SIGKILL, and its workers die with it: the
node is gone. Measured from the kill to every surviving rank running in the next round (each
worker records its round in a file when it starts). Goal (issue 29, a lost node): under
heartbeat_timeout + 1 s = 4 s; the dead leader's lease (2 s) runs out first.

torchrun's etcd backends need etcd's v2 API (etcd 3.6 removed it; Debian's 3.4 serves it only
with --enable-v2), and its c10d backend ends the job when the agent hosting the store dies:
nothing to time beside it.

  /usr/bin/python3 bench/etcd_v3_failover.py [RUNS]
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from common import DDPRUN, report_against_goal, require, wait_for
from etcd_daemons import ETCD, EtcdMembers, stop_job

NODES = 3
WORKERS = 2
GOAL_S = 3 + 1  # the default heartbeat_timeout, plus 1 s


def leading_agent(logs, job_id, timeout=30):
    """The index of the agent whose log says it leads job_id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, path in enumerate(logs):
            with open(path) as log:
                if f"leads job '{job_id}'" in log.read():
                    return i
        time.sleep(0.005)
    sys.exit(f"bench: no agent said it leads {job_id} within {timeout} s; see {logs}")


def one_failover(etcd, run):
    work = tempfile.mkdtemp(prefix="ddprun-etcd-v3-failover-")
    agents = []
    try:
        job_id = f"etcd-v3-failover-{run}"
        # Each rank records the round it runs in when it starts, then runs until stopped.
        program = ["sh", "-c", f"touch {work}/start.$DDPRUN_ROUND.$RANK.$$; exec sleep 600"]
        logs = [os.path.join(work, f"agent{i}.log") for i in range(NODES)]
        for log_path in logs:
            with open(log_path, "w") as log:
                agents.append(subprocess.Popen(
                    [DDPRUN, f"--nnodes=2:{NODES}", f"--nproc_per_node={WORKERS}",
                     "--rdzv_backend=etcd-v3", f"--rdzv_endpoint={etcd.endpoints}",
                     f"--rdzv_id={job_id}"] + program,
                    env=dict(os.environ, DDPRUN_LOG_LEVEL="info"), stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=log))
        wait_for(f"{work}/start.0.*", NODES * WORKERS)
        leader = leading_agent(logs, job_id)
        killed = time.monotonic()
        agents[leader].send_signal(signal.SIGKILL)
        survivors = (NODES - 1) * WORKERS
        deadline = killed + 60
        while len(glob.glob(f"{work}/start.[1-9]*")) < survivors:
            if time.monotonic() > deadline:
                sys.exit(f"bench: the surviving ranks did not run again within 60 s; see {logs}")
            time.sleep(0.005)
        return time.monotonic() - killed
    finally:
        stop_job(agents, [])
        shutil.rmtree(work, ignore_errors=True)


def main():
    require(DDPRUN, "ddprun")
    require(ETCD, "etcd (Debian's etcd-server)")
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with EtcdMembers(3) as etcd:
        seconds = [one_failover(etcd, run) for run in range(runs)]
    print(f"-- {NODES} agents of {WORKERS} workers, --rdzv_backend=etcd-v3 on a 3-member etcd, "
          f"--nnodes=2:{NODES}, default timeouts")
    report_against_goal("kill -9 of the leading agent's node -> every surviving rank running in "
                        "the next round", seconds, GOAL_S, "heartbeat_timeout + 1 s")


if __name__ == "__main__":
    main()
