"""Submit to every worker running: a job of H hosts x 2 workers started from one machine.

ddprun: `ddprun --hosts=...` asks each host's ddprund (one per network namespace) to run the
node agent. Beside it, the way DeepSpeed and Horovod start a multi-node job: one ssh session per
host, all at once, each starting `ddprun --nnodes=H ...` there (sshd in each namespace), against
the same rendezvous (the first host's ddprund). Both measure from the submitter's start to the
last worker's first instruction (each worker writes its start time), in the same run, interleaved.
The submitters' stdin is /dev/null (so no input is forwarded, on either side).

  /usr/bin/python3 bench/host_submit.py [RUNS] [HOSTS...]     (root: network namespaces)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from common import DDPRUN, median, read_times, report_ms, require

DDPRUND = os.path.join(os.path.dirname(DDPRUN), "ddprund")
SSHD = "/usr/sbin/sshd"
WORKERS = 2
NETWORKS = iter(range(1000))  # names are never reused: a deleted namespace may linger


def ip(*args):
    subprocess.run(["ip", *args], check=True)


def address(i):
    return f"10.78.0.{i + 1}"


class Network:
    """A switch namespace with a bridge (10.78.0.254) and one namespace per host."""

    def __init__(self, hosts):
        self.prefix = f"ddpbench-{os.getpid()}-{next(NETWORKS)}"
        self.names = []
        self.switch = f"{self.prefix}-sw"
        ip("netns", "add", self.switch)
        self.names.append(self.switch)
        ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        ip("-n", self.switch, "addr", "add", "10.78.0.254/24", "dev", "br0")
        ip("-n", self.switch, "link", "set", "br0", "up")
        ip("-n", self.switch, "link", "set", "lo", "up")
        for i in range(hosts):
            ns = f"{self.prefix}-n{i}"
            ip("netns", "add", ns)
            self.names.append(ns)
            ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{i}",
               "netns", self.switch)
            ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0", "up")
            ip("-n", ns, "addr", "add", f"{address(i)}/24", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def node(self, i):
        return ["ip", "netns", "exec", f"{self.prefix}-n{i}"]

    def at_switch(self):
        return ["ip", "netns", "exec", self.switch]

    def remove(self):
        for name in reversed(self.names):
            subprocess.run(["ip", "netns", "del", name], check=False)


def start_daemons(network, hosts, work):
    daemons = []
    for i in range(hosts):
        # At info level each daemon logs the moment it started a job's agent.
        log = open(f"{work}/ddprund-{i}.log", "w")
        daemon = subprocess.Popen(
            network.node(i) + [DDPRUND, "--bind=0.0.0.0", f"--token-file={work}/token",
                               "--allow-root-jobs", f"--agent-program={DDPRUN}"],
            stdout=subprocess.PIPE, stderr=log, text=True,
            env=dict(os.environ, DDPRUN_LOG_LEVEL="info"))
        line = daemon.stdout.readline()
        if not line.startswith("ddprund listening on"):
            sys.exit(f"bench: ddprund {i} did not start: {line!r}")
        daemons.append(daemon)
    return daemons


def start_sshds(network, hosts, work):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{work}/host_key"],
                   check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{work}/client_key"],
                   check=True)
    shutil.copy(f"{work}/client_key.pub", f"{work}/authorized_keys")
    with open(f"{work}/sshd_config", "w") as f:
        f.write(f"Port 22\nListenAddress 0.0.0.0\nHostKey {work}/host_key\n"
                f"AuthorizedKeysFile {work}/authorized_keys\nPermitRootLogin yes\n"
                "StrictModes no\nUsePAM no\nPasswordAuthentication no\nPidFile none\n"
                "MaxStartups 100\n")
    os.makedirs("/run/sshd", exist_ok=True)
    sshds = [subprocess.Popen(network.node(i) + [SSHD, "-D", "-f", f"{work}/sshd_config"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for i in range(hosts)]
    time.sleep(0.5)
    return sshds


def worker_program(probe):
    return ["sh", "-c", f'date +%s.%N > {probe}/start.$RANK']


def run_ddprun(network, hosts, work, probe, run_id):
    host_list = ",".join(address(i) for i in range(hosts))
    start = time.time()
    result = subprocess.run(network.at_switch() + [
        DDPRUN, f"--hosts={host_list}", f"--nproc_per_node={WORKERS}", f"--rdzv_id={run_id}",
        f"--token-file={work}/token"] + worker_program(probe),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"bench: ddprun --hosts failed ({result.returncode}): {result.stderr}")
    return start


def run_ssh(network, hosts, work, probe, run_id):
    start = time.time()
    sessions = []
    for i in range(hosts):
        remote = [DDPRUN, f"--nnodes={hosts}", f"--nproc_per_node={WORKERS}",
                  f"--rdzv_endpoint={address(0)}:29400", f"--rdzv_id={run_id}",
                  f"--token-file={work}/token", "--", "sh", "-c",
                  f"'date +%s.%N > {probe}/start.$RANK'"]
        sessions.append(subprocess.Popen(network.at_switch() + [
            "ssh", "-q", "-i", f"{work}/client_key", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
            f"root@{address(i)}", " ".join(remote)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for session in sessions:
        if session.wait() != 0:
            sys.exit("bench: an ssh-started agent failed")
    return start


def agents_started(work, hosts, run_id):
    """When the last daemon started run_id's agent (its log's millisecond timestamps)."""
    times = []
    for i in range(hosts):
        with open(f"{work}/ddprund-{i}.log") as f:
            for line in f:
                if f"started job {run_id} " in line:
                    stamp = line[1:line.index("]")]  # "2026-12-01 13:35:14.777"
                    seconds = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S"))
                    times.append(seconds + int(stamp[20:23]) / 1000)
    if len(times) != hosts:
        sys.exit(f"bench: {len(times)} of {hosts} daemons logged the start of {run_id}")
    return max(times)


def busy_seconds():
    """CPU time the whole machine has been busy (every core), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def latency(probe, start, expected):
    starts = read_times(os.path.join(probe, "start.*"))
    if len(starts) != expected:
        sys.exit(f"bench: expected {expected} workers, saw {len(starts)}")
    return max(starts) - start


def measure(hosts, runs):
    work = tempfile.mkdtemp(prefix="ddprun-bench-")
    with open(f"{work}/token", "w") as f:
        f.write("bench-token\n")
    network = Network(hosts)
    processes = []
    try:
        processes += start_daemons(network, hosts, work)
        ssh = os.path.exists(SSHD)
        if ssh:
            processes += start_sshds(network, hosts, work)
        ddprun_s, ssh_s, busy, fan_out = [], [], [], []
        for run in range(runs):
            probe = tempfile.mkdtemp(dir=work)
            before = busy_seconds()
            start = run_ddprun(network, hosts, work, probe, f"bench-{run}")
            ddprun_s.append(latency(probe, start, hosts * WORKERS))
            busy.append(busy_seconds() - before)
            fan_out.append(agents_started(work, hosts, f"bench-{run}") - start)
            if ssh:
                probe = tempfile.mkdtemp(dir=work)
                ssh_s.append(latency(probe, run_ssh(network, hosts, work, probe, f"ssh-{run}"),
                                     hosts * WORKERS))
        print(f"-- {hosts} hosts x {WORKERS} workers, submit to every worker running")
        ours = report_ms("ddprun", "--hosts (daemons)", ddprun_s)
        report_ms("  of it:", "every agent spawned", fan_out)
        print(f"          the whole job kept the machine's {os.cpu_count()} cores busy for "
              f"{median(busy) * 1000:.0f} ms of CPU (median), start to end")
        if ssh:
            theirs = report_ms("ssh", "one session/host ", ssh_s)
            print(f"ratio     ssh / ddprun = {theirs / ours:.1f}x")
        else:
            print("ssh       skipped: no sshd here (apt-get install openssh-server)")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait()
        network.remove()
        shutil.rmtree(work, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        sys.exit("bench: network namespaces need root")
    require(DDPRUN, "ddprun")
    require(DDPRUND, "ddprund")
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for hosts in [int(h) for h in sys.argv[2:]] or [4, 16]:
        measure(hosts, runs)


if __name__ == "__main__":
    main()
