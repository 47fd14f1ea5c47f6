"""Chaos: a real multi-node training job under one fault at a time, at random times, from a
seeded generator; after each fault and at each job's end, checks that the job recovered or ended
with a root cause within a bound (no hang), that no process of the job is left behind, that the
final parameters equal an uninterrupted run's, that no corrupt checkpoint was loaded, and that
the daemon answered `ddprun status` throughout. A benchmark, not a CI test: it runs minutes.

The job: NODES network namespaces (a bridge in a switch namespace, a veth per node), `ddprund` on
the switch's address, one agent per node (`ddprun --nnodes=NODES --max_restarts=10000`) running
examples/train with one worker, checkpoints every CHECKPOINT_EVERY steps into a small tmpfs that
every node sees; the ranks talk TCP across the links (DDPRUN_CPU_TRANSPORT=tcp), as on real
nodes. Jobs run back to back, each taking faults until it is nearly done, each compared with the
fingerprint of the same job run once without faults (the trainer's resume is deterministic; a
fixed world size keeps the shards, and so the bits, the same).

Faults (one kind after another, each kind once per shuffled block of seven):
  kill_worker         SIGKILL one worker
  kill_agent          SIGKILL one agent; 0.1-1 s later the bench starts that node's agent
                      again (its supervisor, as Kubernetes or systemd would)
  restart_daemon      SIGKILL ddprund, start it again on the same port
  stop_agent          SIGSTOP one agent for longer than heartbeat_timeout, then SIGCONT
  link_flap           one node's link down for 0.5 s to heartbeat_timeout + 2 s, then up
  fill_disk           fill the checkpoint tmpfs for 1-3 s
  corrupt_checkpoint  stop rank 0, flip a byte of the newest checkpoint, SIGKILL rank 0: the
                      restart that follows finds the corrupt file first and must refuse it

Recovery: from the end of the fault (the kill, SIGCONT, link up, space freed, the daemon
listening again) to the first step rank 0 logs after the job's last restart, once it has trained
for SETTLE_S without another restart or round change. A fault the job does not recover from
within RECOVERY_BOUND_S is a hang; the job is then killed.

Every process the bench starts carries CHAOS_RUN=<uuid> in its environment, and /proc is scanned
for it: after each recovery, a marked process that no live agent (or the daemon) has as ancestor
is an orphan; after each job and at the end, every marked process left is one.

Each job's output (every agent's lines, timestamped, with the bench's fault marks) and the
daemon's logs stay in /tmp/ddpchaos-*/logs; the namespaces, the tmpfs and every process go.

Usage: /usr/bin/python3 bench/chaos.py [--seed N] [--faults N]     (root: network namespaces)
"""
import argparse
import atexit
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from common import DDPRUN, median, require

BUILD = os.path.dirname(os.path.dirname(DDPRUN))
DDPRUND = os.path.join(BUILD, "bin", "ddprund")
TRAIN = os.path.join(BUILD, "bin", "train")

NODES = 3
PORT = 29400
SUBNET = "10.79.0"  # the tests use 10.77, host_submit.py 10.78
SERVER_ADDRESS = f"{SUBNET}.254"
HEARTBEAT_S = 2.0
JOIN_TIMEOUT_S = 30.0  # a job short of a node fails after this, instead of waiting 10 minutes
RDZV_CONF = (f"heartbeat_timeout={HEARTBEAT_S:g},last_call_timeout=0.5,"
             f"join_timeout={JOIN_TIMEOUT_S:g}")
CHECKPOINT_EVERY = 20
TMPFS_SIZE = "2m"  # 3 checkpoints of 7 KiB per job, and room to fill quickly
SETTLE_S = HEARTBEAT_S + 2.0  # a node's loss shows up to heartbeat_timeout after the fault's end
RECOVERY_BOUND_S = JOIN_TIMEOUT_S + 30.0
END_BOUND_S = 60.0  # after the last fault: no output and no end for this long is a hang
STATUS_PERIOD_S = 0.5
KINDS = ["kill_worker", "kill_agent", "restart_daemon", "stop_agent", "link_flap", "fill_disk",
         "corrupt_checkpoint"]

STEP_LINE = re.compile(r"^\[rank0\]: epoch \d+ step (\d+)/(\d+) ")
RESUME_LINE = re.compile(r"^\[rank0\]: ddp: resuming from (\S+) \(step (\d+)\)")
SKIP_LINE = re.compile(r"^\[rank0\]: ddp: skipping an invalid checkpoint: (\S+): (.*)")
FINGERPRINT_LINE = re.compile(r"^\[rank0\]: parameters fingerprint ([0-9a-f]+)")


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(command, timeout=30, check=True):
    return subprocess.run(command, check=check, timeout=timeout, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


# ---------------------------------------------------------------------------------------------
# What the bench owns, and its removal on every way out (normal end, exception, Ctrl-C, SIGTERM).

class Cleanup:
    """Undo actions, run once, newest first: from `finally`, atexit, and the signal handlers."""

    def __init__(self):
        self.actions = []
        self.done = False

    def add(self, action):
        self.actions.append(action)

    def run(self):
        if self.done:
            return
        self.done = True
        for action in reversed(self.actions):
            try:
                action()
            except Exception as error:  # one failed undo must not keep the others from running
                print(f"chaos: cleanup: {error}", file=sys.stderr)


CLEANUP = Cleanup()


def on_signal(signum, frame):
    # SystemExit unwinds through every `finally`; the cleanup then runs once.
    raise SystemExit(128 + signum)


class Network:
    """A switch namespace holding a bridge (SERVER_ADDRESS) and NODES node namespaces, each with
    a veth `eth0` to the bridge. Names carry the bench's pid, so nothing else's is touched."""

    def __init__(self, nodes):
        self.prefix = f"ddpchaos{os.getpid()}"
        self.switch = f"{self.prefix}-sw"
        self.nodes = [f"{self.prefix}-n{i}" for i in range(nodes)]
        self.created = []
        CLEANUP.add(self.remove)
        self._add(self.switch)
        self._ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.switch, "addr", "add", f"{SERVER_ADDRESS}/24", "dev", "br0")
        self._ip("-n", self.switch, "link", "set", "br0", "up")
        self._ip("-n", self.switch, "link", "set", "lo", "up")
        for i, ns in enumerate(self.nodes):
            self._add(ns)
            self._ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{i}",
                     "netns", self.switch)
            self._ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0", "up")
            self._ip("-n", ns, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
            self._ip("-n", ns, "link", "set", "eth0", "up")
            self._ip("-n", ns, "link", "set", "lo", "up")

    def _ip(self, *args):
        run(["ip", *args])

    def _add(self, name):
        self._ip("netns", "add", name)
        self.created.append(name)

    def node(self, i):
        return ["ip", "netns", "exec", self.nodes[i]]

    def at_switch(self):
        return ["ip", "netns", "exec", self.switch]

    def set_link(self, i, up):
        self._ip("-n", self.nodes[i], "link", "set", "eth0", "up" if up else "down")

    def remove(self):
        # Deleting a namespace deletes its veth end, and with it the peer on the bridge.
        for name in reversed(self.created):
            run(["ip", "netns", "del", name], check=False)
        self.created = []


class Scratch:
    """The bench's files: a work directory (the token, logs) and the checkpoints' small tmpfs."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ddpchaos-")
        self.token = os.path.join(self.dir, "token")
        with open(self.token, "w") as f:
            f.write("chaos-token\n")
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs)
        self.checkpoints = os.path.join(self.dir, "checkpoints")
        os.makedirs(self.checkpoints)
        run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "chaos", self.checkpoints])
        CLEANUP.add(self.unmount)

    def unmount(self):
        run(["umount", "-l", self.checkpoints], check=False)

    def job_checkpoints(self, name):
        """A job's own checkpoint directory: a job must never resume another's checkpoints."""
        return os.path.join(self.checkpoints, name)


# ---------------------------------------------------------------------------------------------
# The processes of a job, found by the marker in their environment.

def read_environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    except OSError:  # gone, or a zombie (its environment is no longer readable)
        return None


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces
    return int(fields[1]) if fields[0] != "Z" else None


def command_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def marked_processes(marker):
    """{pid: environment} of every live (not zombie) process carrying the marker."""
    found = {}
    needle = marker.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        environ = read_environ(int(name))
        if environ is not None and environ.get(b"CHAOS_RUN") == needle and \
                parent_of(int(name)) is not None:
            found[int(name)] = environ
    return found


def descends_from(pid, ancestors):
    seen = set()
    while pid and pid not in seen:
        if pid in ancestors:
            return True
        seen.add(pid)
        pid = parent_of(pid)
    return False


def orphans(marker, owners):
    """Marked processes no process in `owners` (live agents, the daemon) has as ancestor, and
    that stay so for a second (a process killed a moment ago may still be dying)."""
    suspects = [pid for pid in marked_processes(marker) if not descends_from(pid, owners)]
    if not suspects:
        return []
    time.sleep(1.0)
    still = marked_processes(marker)
    return [(pid, command_of(pid)) for pid in suspects
            if pid in still and not descends_from(pid, owners)]


def kill_marked(marker, keep=None):
    """SIGKILL (after SIGCONT, for stopped ones) every process carrying the marker, but `keep`
    and its descendants when given: what a job left behind."""
    for pid in marked_processes(marker):
        if keep is not None and descends_from(pid, {keep}):
            continue
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------------------------------------
# The daemon, its status, and the agents.

class Daemon:
    """ddprund on SERVER_ADDRESS:PORT in the switch namespace; it can be killed and restarted."""

    def __init__(self, network, scratch, marker):
        self.network, self.scratch, self.marker = network, scratch, marker
        self.process = None
        self.starts = 0

    def start(self):
        logfile = open(os.path.join(self.scratch.logs, f"ddprund.{self.starts}.log"), "w")
        self.starts += 1
        self.process = subprocess.Popen(
            self.network.at_switch() + [DDPRUND, "--bind=0.0.0.0", f"--port={PORT}",
                                        f"--token-file={self.scratch.token}"],
            stdout=subprocess.PIPE, stderr=logfile, text=True,
            env=dict(os.environ, CHAOS_RUN=self.marker, DDPRUN_LOG_LEVEL="info"))
        logfile.close()
        # A restarted daemon may find the port held a moment longer: it then exits, and is
        # started again, for up to 10 s.
        ready, _, _ = select.select([self.process.stdout], [], [], 10)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("ddprund listening on"):
            self.process.kill()
            self.process.wait(timeout=10)
            return False
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        return True

    def start_within(self, seconds):
        deadline = time.monotonic() + seconds
        while not self.start():
            if time.monotonic() > deadline:
                sys.exit("chaos: ddprund did not start; see its logs in " + self.scratch.logs)
            time.sleep(0.2)

    def kill(self):
        self.process.kill()
        self.process.wait(timeout=10)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class StatusPoller(threading.Thread):
    """Asks the daemon `ddprun status --json` every STATUS_PERIOD_S from the switch namespace;
    keeps every answer's time and success, and the time each job's round last changed."""

    def __init__(self, network, scratch):
        super().__init__(daemon=True)
        self.command = network.at_switch() + [
            DDPRUN, "status", f"--rdzv_endpoint={SERVER_ADDRESS}:{PORT}",
            f"--token-file={scratch.token}", "--json"]
        self.samples = []  # (time, answered)
        # job id -> (round, the last time before it was seen): the round changed after that.
        self.rounds = {}
        self.restarts = {}  # job id -> restarts used, as last seen
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def run(self):
        previous = time.time()
        while not self.stopping.is_set():
            asked = time.time()
            try:
                result = run(self.command, timeout=5, check=False)
                answered = result.returncode == 0
                jobs = json.loads(result.stdout)["jobs"] if answered else []
            except (subprocess.TimeoutExpired, ValueError, KeyError):
                answered, jobs = False, []
            with self.lock:
                self.samples.append((asked, answered))
                for job in jobs:
                    self.restarts[job["job_id"]] = job.get("restarts_used", 0)
                    seen = self.rounds.get(job["job_id"])
                    if seen is None or seen[0] != job.get("round"):
                        self.rounds[job["job_id"]] = (job.get("round"), previous)
            previous = asked
            self.stopping.wait(max(0.0, STATUS_PERIOD_S - (time.time() - asked)))

    def restarts_used(self, job_id):
        with self.lock:
            return self.restarts.get(job_id)

    def round_changed_at(self, job_id):
        with self.lock:
            seen = self.rounds.get(job_id)
        return seen[1] if seen else 0.0

    def failures_outside(self, windows):
        """(answers, failures outside `windows`, each window's gap): a window is a daemon
        restart, and its gap runs from the kill to the first answer after the restart."""
        with self.lock:
            samples = list(self.samples)
        failures, gaps = 0, []
        for start, end in windows:
            answered_after = [t for t, ok in samples if ok and t >= end]
            gaps.append((answered_after[0] if answered_after else time.time()) - start)
        for t, ok in samples:
            inside = any(start <= t <= start + gap for (start, _), gap in zip(windows, gaps))
            if not ok and not inside:
                failures += 1
        return len(samples), failures, gaps


class JobOutput:
    """What the agents of one job printed, with the time each line was read, parsed into the
    events the checks need. Fed by one reader thread per agent stream."""

    def __init__(self, path):
        self.file = open(path, "w")
        self.lock = threading.Lock()
        self.steps = []  # (time, step, total) of rank 0
        self.resumes = []  # (time, path, step)
        self.skips = []  # (time, path, why)
        self.fingerprint = None
        self.root_causes = 0
        self.last_line = time.time()

    def read(self, stream, node, name):
        for line in stream:
            now = time.time()
            line = line.rstrip("\n")
            with self.lock:
                if self.file.closed:  # a stream a leftover process held open past the job
                    return
                self.last_line = now
                self.file.write(f"{now:.3f} n{node} {name} {line}\n")
                if m := STEP_LINE.match(line):
                    self.steps.append((now, int(m.group(1)), int(m.group(2))))
                elif m := RESUME_LINE.match(line):
                    self.resumes.append((now, m.group(1), int(m.group(2))))
                elif m := SKIP_LINE.match(line):
                    self.skips.append((now, m.group(1), m.group(2)))
                elif m := FINGERPRINT_LINE.match(line):
                    self.fingerprint = m.group(1)
                elif line.startswith("Root cause"):
                    self.root_causes += 1

    def snapshot(self):
        with self.lock:
            return list(self.steps), list(self.resumes), list(self.skips)

    def note(self, text):
        with self.lock:
            self.file.write(f"{time.time():.3f} bench {text}\n")
            self.file.flush()

    def close(self):
        with self.lock:
            self.file.close()


class Job:
    """One training job: an agent per node, each restartable (as a node's supervisor would)."""

    def __init__(self, name, network, scratch, marker, epochs):
        self.name, self.network, self.marker = name, network, marker
        self.checkpoints = scratch.job_checkpoints(name)
        self.output = JobOutput(os.path.join(scratch.logs, f"{name}.log"))
        self.args = [DDPRUN, f"--nnodes={NODES}", "--nproc_per_node=1",
                     f"--rdzv_endpoint={SERVER_ADDRESS}:{PORT}", f"--rdzv_id={name}",
                     f"--token-file={scratch.token}", f"--rdzv_conf={RDZV_CONF}",
                     "--max_restarts=10000", "--shutdown_timeout=5", "--tty=never",
                     "--stdin=none", TRAIN, "--epochs", str(epochs), "--checkpoint-dir",
                     self.checkpoints, "--checkpoint-every", str(CHECKPOINT_EVERY)]
        self.agents = [None] * NODES
        self.readers = []  # the threads reading every agent's streams, old agents' too
        self.started = time.time()
        for i in range(NODES):
            self.start_agent(i)

    def start_agent(self, i):
        # TCP between the ranks, as between real nodes: ranks of one kernel would otherwise
        # talk through shared memory, which no link fault reaches.
        agent = subprocess.Popen(self.network.node(i) + self.args, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, CHAOS_RUN=self.marker,
                                          DDPRUN_CPU_TRANSPORT="tcp"))
        for stream, name in ((agent.stdout, "out"), (agent.stderr, "err")):
            reader = threading.Thread(target=self.output.read, args=(stream, i, name), daemon=True)
            reader.start()
            self.readers.append(reader)
        self.agents[i] = agent

    def live_agents(self):
        return {a.pid for a in self.agents if a.poll() is None}

    def ended(self):
        return all(a.poll() is not None for a in self.agents)

    def workers(self):
        """{pid: environment} of the workers live agents run now."""
        agents = self.live_agents()
        return {pid: env for pid, env in marked_processes(self.marker).items()
                if parent_of(pid) in agents and b"RANK" in env}

    def kill(self):
        for agent in self.agents:
            if agent.poll() is None:
                agent.kill()
        for agent in self.agents:
            agent.wait(timeout=30)

    def progress(self):
        steps, _, _ = self.output.snapshot()
        return (steps[-1][1], steps[-1][2]) if steps else (0, 1)


# ---------------------------------------------------------------------------------------------
# The faults. Each injects one fault into the running job, drawing its choices (which node,
# how long) from the fault's own generator, and records what it did in the Fault.

class Fault:
    """One injected fault: what it did, and what the checks after it found."""

    def __init__(self, kind, job, rng):
        self.kind, self.job, self.rng = kind, job.name, rng
        self.started = self.ended = time.time()
        self.detail = ""
        self.corrupted = None  # the checkpoint path corrupt_checkpoint spoiled
        self.outcome = None  # recovered, job ended, hang
        self.recovery_s = None
        self.corrupt_load = False
        self.orphans = []


def wait_for_workers(job, want=1, timeout=10):
    """The job's workers once at least `want` run (between rounds there are fewer), or {}."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = job.workers()
        if len(workers) >= want:
            return workers
        time.sleep(0.05)
    return {}


def fault_kill_worker(ctx, job, fault):
    rank = str(fault.rng.randrange(NODES)).encode()  # one worker per node: as many ranks
    workers = wait_for_workers(job, NODES)
    pids = [pid for pid, env in workers.items() if env.get(b"RANK") == rank]
    if not pids:
        fault.detail = f"no rank {rank.decode()} to kill"
        return
    os.kill(pids[0], signal.SIGKILL)
    fault.detail = f"rank {rank.decode()} (pid {pids[0]})"


def fault_kill_agent(ctx, job, fault):
    i = fault.rng.randrange(NODES)
    agent = job.agents[i]
    agent.kill()
    agent.wait(timeout=10)
    time.sleep(fault.rng.uniform(0.1, 1.0))
    job.start_agent(i)
    fault.detail = f"node {i} (pid {agent.pid}), restarted"


def fault_restart_daemon(ctx, job, fault):
    ctx.daemon.kill()
    time.sleep(fault.rng.uniform(0.1, 1.0))
    ctx.daemon.start_within(10)
    ctx.daemon_windows.append((fault.started, time.time()))
    fault.detail = f"down {time.time() - fault.started:.1f} s"


def fault_stop_agent(ctx, job, fault):
    i = fault.rng.randrange(NODES)
    pid = job.agents[i].pid
    seconds = HEARTBEAT_S + fault.rng.uniform(0.5, 2.0)
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)
    fault.detail = f"node {i} for {seconds:.1f} s"


def fault_link_flap(ctx, job, fault):
    i = fault.rng.randrange(NODES)
    seconds = fault.rng.uniform(0.5, HEARTBEAT_S + 2.0)
    ctx.network.set_link(i, up=False)
    try:
        time.sleep(seconds)
    finally:
        ctx.network.set_link(i, up=True)
    fault.detail = f"node {i} for {seconds:.1f} s"


def fault_fill_disk(ctx, job, fault):
    seconds = fault.rng.uniform(1.0, 3.0)
    filler = os.path.join(ctx.scratch.checkpoints, "filler")
    try:
        with open(filler, "wb") as f:
            chunk = b"\0" * (64 << 10)
            try:
                while True:
                    f.write(chunk)
                    f.flush()
            except OSError:  # ENOSPC: full
                pass
        time.sleep(seconds)
    finally:
        try:
            os.unlink(filler)
        except OSError:
            pass
    fault.detail = f"for {seconds:.1f} s"


def newest_checkpoint(directory):
    names = sorted(n for n in os.listdir(directory) if n.startswith("checkpoint-")
                   and n.endswith(".ddp"))
    return os.path.join(directory, names[-1]) if names else None


def fault_corrupt_checkpoint(ctx, job, fault):
    # Rank 0 writes the checkpoints: stopped, it writes no newer one between the corruption and
    # the restart, so the restart's newest file is the corrupt one.
    rank0 = [pid for pid, env in wait_for_workers(job, NODES).items() if env.get(b"RANK") == b"0"]
    if not rank0:
        fault.detail = "no rank 0 to stop"
        return
    os.kill(rank0[0], signal.SIGSTOP)
    path = newest_checkpoint(job.checkpoints)
    if path:
        size = os.path.getsize(path)
        offset = fault.rng.randrange(24, size - 4)  # inside the payload, past the 20-byte header
        fd = os.open(path, os.O_RDWR)
        try:
            byte = os.pread(fd, 1, offset)
            os.pwrite(fd, bytes([byte[0] ^ 0x5A]), offset)
        finally:
            os.close(fd)
        fault.corrupted = path
        fault.detail = f"{os.path.basename(path)} byte {offset}"
    os.kill(rank0[0], signal.SIGKILL)


FAULTS = {
    "kill_worker": fault_kill_worker,
    "kill_agent": fault_kill_agent,
    "restart_daemon": fault_restart_daemon,
    "stop_agent": fault_stop_agent,
    "link_flap": fault_link_flap,
    "fill_disk": fault_fill_disk,
    "corrupt_checkpoint": fault_corrupt_checkpoint,
}


# ---------------------------------------------------------------------------------------------
# Watching a job.

def wait_recovery(ctx, job, fault):
    """Waits until the job trains steadily again after `fault`, or ends, or RECOVERY_BOUND_S
    passes (a hang). Sets the fault's outcome and recovery time."""
    deadline = fault.ended + RECOVERY_BOUND_S
    while True:
        now = time.time()
        if job.ended():
            fault.outcome = "job ended"
            return
        steps, resumes, _ = job.output.snapshot()
        # The last disruption: the fault's end, the job's last restart, its last round change.
        anchor = max([fault.ended, ctx.status.round_changed_at(job.name)] +
                     [t for t, _, _ in resumes])
        after = [t for t, _, _ in steps if t > anchor]
        if after and now - anchor >= SETTLE_S and now - after[-1] < 1.0:
            fault.outcome = "recovered"
            fault.recovery_s = after[0] - fault.ended
            return
        if now > deadline:
            fault.outcome = "hang"
            return
        time.sleep(0.1)


def check_corrupt_load(job, fault):
    """The first restart after corrupt_checkpoint must skip the corrupt file, never load it."""
    _, resumes, skips = job.output.snapshot()
    after = [(t, path) for t, path, _ in resumes if t >= fault.started]
    if after and after[0][1] == fault.corrupted:
        fault.corrupt_load = True
    refused = any(path == fault.corrupted and t >= fault.started for t, path, _ in skips)
    fault.detail += ", refused" if refused else ", not refused: " + (
        f"loaded {after[0][1]}" if after else "no restart seen")


def wait_end(job):
    """Waits for every agent to exit; a job that prints nothing and does not end for
    END_BOUND_S is hung, and killed. Returns "finished", "failed" or "hang (killed)"."""
    while not job.ended():
        if time.time() - job.output.last_line > END_BOUND_S:
            job.kill()
            return "hang (killed)"
        time.sleep(0.2)
    codes = [a.returncode for a in job.agents]
    return "finished" if all(c == 0 for c in codes) else "failed"


class Context:
    """What the faults act on."""

    def __init__(self, network, scratch, daemon, status):
        self.network, self.scratch, self.daemon, self.status = network, scratch, daemon, status
        self.daemon_windows = []  # (kill, restarted) of each restart_daemon


def fault_plan(seed, count):
    """count (kind, seed) pairs: each kind once per shuffled block of len(KINDS), and a seed for
    each fault's own generator. Drawn up front, so that a seed gives the same faults after the
    same gaps with the same targets, whichever job each lands in (which the machine's speed
    decides)."""
    rng = random.Random(seed)
    kinds = []
    while len(kinds) < count:
        block = list(KINDS)
        rng.shuffle(block)
        kinds += block
    return [(kind, rng.getrandbits(64)) for kind in kinds[:count]]


def job_orphans(ctx, job, extra_owners=()):
    owners = job.live_agents() | {ctx.daemon.process.pid} | set(extra_owners)
    return orphans(job.marker, owners)


class JobResult:
    """How one job ended, and what its end left behind."""

    def __init__(self, job, outcome, restarts, orphans):
        self.name = job.name
        self.outcome = outcome  # finished, failed, hang (killed), killed after a fault's hang
        self.codes = [a.returncode for a in job.agents]
        self.fingerprint = job.output.fingerprint
        self.root_causes = job.output.root_causes  # "Root cause" lines the agents printed
        self.resumes = len(job.output.snapshot()[1])
        self.restarts = restarts  # restarts used, as ddprun status last said
        self.seconds = time.time() - job.started
        self.orphans = orphans
        # Temporary files of checkpoint writes that never finished (a writer killed mid-write).
        self.temporaries = sum(".tmp." in name for name in os.listdir(job.checkpoints)) \
            if os.path.isdir(job.checkpoints) else 0


def inject(ctx, job, kind, rng):
    """Injects one fault of `kind`, waits for the job's recovery, and checks what it left."""
    fault = Fault(kind, job, rng)
    job.output.note(f"fault {kind} starts")
    FAULTS[kind](ctx, job, fault)
    fault.ended = time.time()
    job.output.note(f"fault {kind} ended: {fault.detail}")
    wait_recovery(ctx, job, fault)
    if fault.corrupted:
        check_corrupt_load(job, fault)
    fault.orphans = job_orphans(ctx, job)
    log(f"  {kind:18s} {fault.detail:48s} -> {fault.outcome}"
        + (f" in {fault.recovery_s:.2f} s" if fault.recovery_s is not None else "")
        + (f", ORPHANS {fault.orphans}" if fault.orphans else "")
        + (", CORRUPT LOAD" if fault.corrupt_load else ""))
    return fault


def run_job(ctx, name, epochs, plan, marker):
    """Runs one job, injecting the faults at the front of `plan` (taking them off), each after a
    random gap, while it has written a few checkpoints and is less than 75% done (the rest leaves
    time to see it recover). Returns (faults, JobResult)."""
    job = Job(name, ctx.network, ctx.scratch, marker, epochs)
    faults = []
    hung = False
    try:
        while plan and not job.ended():
            step, total = job.progress()
            if step < 3 * CHECKPOINT_EVERY:
                time.sleep(0.1)
                continue
            kind, seed = plan[0]
            rng = random.Random(seed)  # a fault left for the next job draws the same gap there
            time.sleep(rng.uniform(0.5, 3.0))
            if job.ended() or job.progress()[0] / total > 0.75:
                break
            plan.pop(0)
            faults.append(inject(ctx, job, kind, rng))
            if faults[-1].outcome == "hang":
                hung = True
                job.kill()
                break
        # A fault's hang is counted once, with the fault.
        outcome = "killed after a fault's hang" if hung else wait_end(job)
    except BaseException:
        job.kill()
        raise
    # Its agents gone, every marked process but the daemon is one the job left behind.
    left = job_orphans(ctx, job)
    kill_marked(marker, ctx.daemon.process.pid)
    for reader in job.readers:  # the last lines (a fingerprint) may still be on their way
        reader.join(timeout=5)
    result = JobResult(job, outcome, ctx.status.restarts_used(name), left)
    job.output.close()
    shutil.rmtree(job.checkpoints, ignore_errors=True)  # the tmpfs stays empty between jobs
    return faults, result


# ---------------------------------------------------------------------------------------------
# The report.

def fault_table(faults):
    lines = ["| fault | injected | recovered | job ended | hangs | orphans | corrupt loads | "
             "recovery median s | max s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for kind in KINDS + ["all"]:
        of = [f for f in faults if kind in ("all", f.kind)]
        if not of:
            continue
        times = [f.recovery_s for f in of if f.recovery_s is not None]
        counts = [len(of), sum(f.outcome == "recovered" for f in of),
                  sum(f.outcome == "job ended" for f in of),
                  sum(f.outcome == "hang" for f in of), sum(len(f.orphans) for f in of),
                  sum(f.corrupt_load for f in of)]
        spread = f"{median(times):.2f} | {max(times):.2f}" if times else "- | -"
        lines.append(f"| {kind} | " + " | ".join(map(str, counts)) + f" | {spread} |")
    return lines


def job_table(jobs, faults, reference):
    lines = ["| job | faults | outcome | agents' exit | restarts used | resumes | seconds | "
             "fingerprint | orphans | checkpoint temporaries left |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for job in jobs:
        outcome = job.outcome
        if outcome == "failed":
            outcome += " (root cause reported)" if job.root_causes else " (**no root cause**)"
        same = "= reference" if job.fingerprint == reference else f"**{job.fingerprint}**"
        lines.append(f"| {job.name} | {sum(f.job == job.name for f in faults)} | {outcome} | "
                     f"{job.codes} | {job.restarts} | {job.resumes} | {job.seconds:.0f} | "
                     f"{same} | {len(job.orphans)} | {job.temporaries} |")
    return lines


def summary(faults, jobs, reference, status, left, elapsed, seed):
    answers, unanswered, gaps = status
    hangs = sum(f.outcome == "hang" for f in faults) + \
        sum(j.outcome.startswith("hang") for j in jobs)
    orphans = sum(len(f.orphans) for f in faults) + sum(len(j.orphans) for j in jobs) + len(left)
    mismatches = sum(j.outcome == "finished" and j.fingerprint != reference for j in jobs)
    failed = [j for j in jobs if j.outcome == "failed"]
    gap_text = f"median {median(gaps):.2f} s, max {max(gaps):.2f} s" if gaps else "none"
    return [
        f"seed {seed}, {len(faults)} faults in {len(jobs)} jobs, {elapsed / 60:.1f} min; "
        f"reference fingerprint {reference}",
        f"hangs {hangs}, orphans {orphans}, mismatches {mismatches}, corrupt loads "
        f"{sum(f.corrupt_load for f in faults)}; jobs failed {len(failed)} "
        f"(without a root cause: {sum(not j.root_causes for j in failed)})",
        f"left after the session, the daemon stopped: {len(left)} processes {left}",
        f"ddprun status: {answers} asked, {unanswered} unanswered outside daemon restarts; "
        f"daemon restarts' gaps (kill to first answer): {gap_text}",
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=800,
                        help="each job's length: 86 steps an epoch on 3 ranks (800: about a "
                             "minute without faults on 2 cores)")
    parser.add_argument("--max-minutes", type=float, default=30,
                        help="no new job starts after this")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("chaos: network namespaces and tmpfs need root")
    for path, what in ((DDPRUN, "ddprun"), (DDPRUND, "ddprund"), (TRAIN, "examples/train")):
        require(path, what)

    marker = uuid.uuid4().hex
    atexit.register(CLEANUP.run)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    started = time.time()
    try:
        CLEANUP.add(lambda: kill_marked(marker))
        network = Network(NODES)
        scratch = Scratch()
        log(f"seed {args.seed}, {args.faults} faults; logs in {scratch.logs}")
        daemon = Daemon(network, scratch, marker)
        daemon.start_within(10)
        CLEANUP.add(daemon.stop)
        status = StatusPoller(network, scratch)
        status.start()
        CLEANUP.add(status.stopping.set)
        ctx = Context(network, scratch, daemon, status)

        log("reference run (no faults)")
        _, ref = run_job(ctx, "reference", args.epochs, [], marker)
        if ref.outcome != "finished" or not ref.fingerprint:
            sys.exit(f"chaos: the reference run did not finish ({ref.outcome}, {ref.codes}); "
                     f"see {scratch.logs}")
        log(f"reference: {ref.seconds:.1f} s, fingerprint {ref.fingerprint}")

        plan = fault_plan(args.seed, args.faults)
        faults, jobs = [], []
        while plan and time.time() - started < args.max_minutes * 60:
            name = f"chaos-{len(jobs)}"
            log(f"job {name}")
            job_faults, result = run_job(ctx, name, args.epochs, plan, marker)
            faults += job_faults
            jobs.append(result)
            same = "= reference" if result.fingerprint == ref.fingerprint else result.fingerprint
            log(f"job {name}: {result.outcome} {result.codes} in {result.seconds:.0f} s, "
                f"fingerprint {same}" + (f", ORPHANS {result.orphans}" if result.orphans else ""))

        status.stopping.set()  # first: the daemon's stop is no failure to answer
        status.join(timeout=10)
        daemon.stop()
        # At the end nothing of the session may be left, the daemon included.
        time.sleep(1.0)
        left = [(pid, command_of(pid)) for pid in marked_processes(marker)]
        report = fault_table(faults) + [""] + job_table(jobs, faults, ref.fingerprint) + [""] + \
            summary(faults, jobs, ref.fingerprint, status.failures_outside(ctx.daemon_windows),
                    left, time.time() - started, args.seed)
        print()
        print("\n".join(report))
    finally:
        CLEANUP.run()


if __name__ == "__main__":
    main()
