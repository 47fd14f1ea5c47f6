"""etcd members (Debian's etcd-server) and `ddprund --store=etcd` daemons on them, for the
benchmarks of daemons on etcd. Every member listens on a loopback address of this process's own
(common.unshared_loopback_endpoint), so no other benchmark or test shares it."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from common import BIN, require, unshared_loopback_endpoint

DDPRUND = os.path.join(BIN, "ddprund")
ETCD = "/usr/bin/etcd"


def serves_clients(log_path):
    """Whether the member logging to `log_path` has joined its cluster and serves clients."""
    with open(log_path) as log:
        return "ready to serve client requests" in log.read()


class EtcdMembers:
    """`count` members of one new cluster, each serving clients once the constructor returns.
    Quick elections, as a local cluster allows (50 ms heartbeats, 500 ms election timeout)."""

    def __init__(self, count=1):
        self.work = tempfile.mkdtemp(prefix="ddprun-etcd-")
        names = [f"m{i}" for i in range(count)]
        clients = [unshared_loopback_endpoint() for _ in names]
        peers = [unshared_loopback_endpoint() for _ in names]
        cluster = ",".join(f"{name}=http://{peer}" for name, peer in zip(names, peers))
        self.endpoints = ",".join(clients)
        self.members = []
        for name, client, peer in zip(names, clients, peers):
            with open(os.path.join(self.work, f"{name}.log"), "w") as log:
                self.members.append(self.start_member(name, client, peer, cluster, log))
        deadline = time.monotonic() + 60
        for name, member in zip(names, self.members):
            log_path = os.path.join(self.work, f"{name}.log")
            while not serves_clients(log_path):
                if member.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    sys.exit(f"bench: etcd member {name} did not start; see {log_path}")
                time.sleep(0.02)

    def start_member(self, name, client, peer, cluster, log):
        """Member `name` of `cluster`, logging to `log`."""
        return subprocess.Popen([
            ETCD, "--name", name, "--data-dir", os.path.join(self.work, name),
            "--listen-client-urls", f"http://{client}", "--advertise-client-urls",
            f"http://{client}", "--listen-peer-urls", f"http://{peer}",
            "--initial-advertise-peer-urls", f"http://{peer}", "--initial-cluster", cluster,
            "--heartbeat-interval", "50", "--election-timeout", "500"],
            stdout=log, stderr=subprocess.STDOUT)

    def close(self):
        for member in self.members:
            if member.poll() is None:
                member.terminate()
            member.wait()
        shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *unused):
        self.close()


def require_etcd_daemons():
    """Exits the benchmark, saying what to install or build, without ddprund or Debian's etcd."""
    require(DDPRUND, "ddprund")
    require(ETCD, "etcd (Debian's etcd-server)")


def start_daemon(etcd_endpoints):
    """A ddprund on the etcd store, on a port of its own choosing: it and its "host:port"."""
    daemon = subprocess.Popen([DDPRUND, "--port=0", "--store=etcd",
                               f"--etcd-endpoints={etcd_endpoints}"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = daemon.stdout.readline()
    if not line.startswith("ddprund listening on "):
        sys.exit(f"bench: ddprund did not start: {line!r}")
    return daemon, line.split()[-1]


def stop_daemon(daemon):
    if daemon.poll() is None:
        daemon.terminate()
    daemon.wait()


def stop_job(agents, daemons):
    """Stops a benchmark's agents (SIGTERM: their bounded group stop), then its daemons."""
    for agent in agents:
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
    for agent in agents:
        agent.wait(timeout=60)
    for daemon, _ in daemons:
        stop_daemon(daemon)
