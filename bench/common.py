"""Shared helpers of the launcher benchmarks: where things are, and how to time them.

Every benchmark runs the anchor (torchrun, through bench/torchrun_debian.py, with the PyTorch
programs in bench/anchors/) beside ddprun in the same run and prints ratios; absolute times on
shared machines are noise, ratios much less so.
"""
import glob
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The PyTorch programs torchrun runs beside ddprun's (bench/anchors/).
ANCHORS = os.path.join(ROOT, "bench", "anchors")
BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"))
BIN = os.path.join(BUILD, "bin")  # every program of a build
# DDPRUN: another ddprun to measure (the wheel's, installed in a virtual environment).
DDPRUN = os.environ.get("DDPRUN") or os.path.join(BIN, "ddprun")
# The machine's floor: forks and execs the same workers and waits for them (bench/spawn_floor.c).
SPAWN_FLOOR = os.path.join(BIN, "spawn-floor")
# The restart probe's worker (bench/workers/restart_probe.sh).
PROBE = os.path.join(ROOT, "bench", "workers", "restart_probe.sh")
# Debian's python, which has Debian's torch; its torchrun 1.13 needs bench/torchrun_debian.py.
PYTHON = "/usr/bin/python3"
TORCHRUN = [PYTHON, os.path.join(ROOT, "bench", "torchrun_debian.py")]


def torch2_python():
    """The interpreter of the pinned torch 2.x (tests/pytorch/torch_pin.txt) in the project's
    environment, which `./run.sh torch-venv` installs when it is missing (minutes, once)."""
    named = subprocess.run([os.path.join(ROOT, "run.sh"), "torch-venv"], check=True,
                           stdout=subprocess.PIPE, text=True).stdout.split()
    if not named:
        sys.exit("bench: ./run.sh torch-venv named no interpreter")
    return named[-1]


def torchrun2(python):
    """torchrun 2.x: the pinned torch's own, run by its interpreter."""
    return [python, "-m", "torch.distributed.run"]


def path_with(python):
    """An environment whose PATH finds `python`'s directory first: the python3 a .py worker
    runs under, for ddprun and torchrun alike."""
    return dict(os.environ, PATH=os.path.dirname(python) + ":" + os.environ.get("PATH", ""))


def wall_seconds(command, env=None):
    """Runs command to completion; returns its wall time in seconds. Fails on a non-zero exit."""
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def run_bounded(command, env, timeout):
    """Runs command, its output discarded, in a process group of its own: "ok" when it exits 0
    within `timeout` seconds, "failed" on another exit, "hung" when it did not finish (its group
    is then killed). For anchors that do not always get through a run here (torchrun 2.x's
    restart of a gloo job: bench/RESULTS.md), so that the caller counts such runs and tries
    again instead of stopping, or waiting for ever."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return "ok" if process.wait(timeout=timeout) == 0 else "failed"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()
        return "hung"


def peak_rss_mib(command, env=None):
    """Peak resident memory of command's process tree in MiB, as GNU time reports it (the
    largest of the process and its descendants)."""
    result = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, check=True, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(result.stderr.strip().splitlines()[-1]) / 1024


def median(values):
    return statistics.median(values)


def require(path, what):
    if not os.path.exists(path):
        sys.exit(f"bench: {what} not found at {path}; run bench/run.sh, which builds and installs "
                 "what is missing")


_endpoints = itertools.count()


def unshared_loopback_endpoint():
    """host:port for one run's rendezvous, never a port probed free and handed on (another
    process could take it between the probe and the bind): an address of loopback's
    127.0.0.0/8 that this process's id picks, so no other benchmark or test shares it, and a
    port counted up from 21000, below the kernel's ephemeral range."""
    pid = os.getpid()
    address = f"127.{100 + (pid >> 16) % 150}.{(pid >> 8) & 255}.{pid & 255}"
    return f"{address}:{21000 + next(_endpoints)}"


def wait_for(pattern, count, timeout=60):
    """Waits until `count` files match pattern; exits the benchmark after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while len(glob.glob(pattern)) < count:
        if time.monotonic() > deadline:
            sys.exit(f"bench: timed out waiting for {count} x {pattern}")
        time.sleep(0.005)


def read_times(pattern):
    """The timestamps (seconds since the epoch) in the files matching pattern."""
    times = []
    for path in glob.glob(pattern):
        with open(path) as f:
            times.append(float(f.read()))
    return times


def probe_restart_latency(probe_dir, workers):
    """The restart probe's result: from the failure to the last of `workers` restarted."""
    (failed,) = read_times(os.path.join(probe_dir, "fail"))
    starts = read_times(os.path.join(probe_dir, "start.*"))
    if len(starts) != workers:
        sys.exit(f"bench: expected {workers} restarted workers, saw {len(starts)}")
    return max(starts) - failed


def report_ms(name, what, seconds):
    """Prints one line "<name> <what> median ... ms (min, max, n)"; returns the median."""
    print(f"{name:9s} {what} median {median(seconds) * 1000:8.1f} ms   "
          f"(min {min(seconds) * 1000:.1f}, max {max(seconds) * 1000:.1f}, n={len(seconds)})")
    return median(seconds)


def one_restart(command, workers=4):
    """Runs command (which runs PROBE as its workers) once; returns its restart latency."""
    with tempfile.TemporaryDirectory(prefix="ddprun_probe_") as probe_dir:
        wall_seconds(command, dict(os.environ, PROBE_DIR=probe_dir))
        return probe_restart_latency(probe_dir, workers)


def report_against_goal(what, seconds, goal_s, goal_text):
    """Prints "ddprun <what>: median ... ms (min, max, n)" and the median's ratio to the goal."""
    print(f"ddprun    {what}: median {median(seconds) * 1000:.0f} ms "
          f"(min {min(seconds) * 1000:.0f}, max {max(seconds) * 1000:.0f}, n={len(seconds)})")
    print(f"goal      {goal_text} = {goal_s} s; measured / goal = {median(seconds) / goal_s:.2f}")
