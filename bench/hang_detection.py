"""Hang detection: how long from the moment a rank stops to ddprun's report naming it, and what
counting progress costs a 4 KiB all-reduce. torchrun beside it in the same run.

1. Detection. 3 workers; rank 1 stops at step 100 (a C++ rank blocked in its own code while the
   others wait in an all-reduce; a Python rank stuck in a function, reporting through
   DDPRUN_PROGRESS_FILE). The benchmark stamps, as it reads them, the worker's "rank stuck" line
   and ddprun's "hang:" line (both pass through ddprun's pipes as they are written): the
   difference is the time to the report, --hang_timeout included. torchrun runs the same Python
   job (it has no hang detection): it is given 3 x the timeout + 10 s and then stopped.
2. Cost. ddp-allreduce-bench at 4 KiB on 2 ranks, with and without --hang_timeout (the
   runtime counts every collective in the progress page only with it), interleaved; the 4 KiB
   latency medians and their spread.

Usage: /usr/bin/python3 bench/hang_detection.py [RUNS]
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from common import DDPRUN, ROOT, TORCHRUN, median, require

BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"))
CXX_WORKER = os.path.join(BUILD, "bin", "collectives_worker")
PY_WORKER = os.path.join(ROOT, "tests", "workers", "progress_worker.py")
ALLREDUCE = os.path.join(BUILD, "bin", "ddp-allreduce-bench")
TIMEOUT_S = 2.0


def stamped_run(command, env, give_up_s):
    """Runs command; returns (seconds from the first "rank stuck" line to the first "hang:"
    line, or None when none came within give_up_s of the stuck line)."""
    stuck = []
    found = []

    def watch(stream, needle, into):
        for line in stream:
            if needle in line and not into:
                into.append(time.perf_counter())

    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    readers = [threading.Thread(target=watch, args=(process.stdout, "rank stuck", stuck)),
               threading.Thread(target=watch, args=(process.stderr, "hang:", found))]
    for reader in readers:
        reader.start()
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline and process.poll() is None:
        if stuck and (found or time.perf_counter() - stuck[0] > give_up_s):
            break
        time.sleep(0.01)
    if process.poll() is None and not found:
        os.killpg(process.pid, signal.SIGKILL)  # torchrun: it would wait forever
    process.wait()
    for reader in readers:
        reader.join()
    if not stuck:
        raise RuntimeError(f"no rank stopped: {' '.join(command)}")
    return found[0] - stuck[0] if found else None


def detection(runs):
    hang = [f"--hang_timeout={TIMEOUT_S}", "--hang_first_timeout=60", "--max_restarts=1"]
    cases = {
        "ddprun, C++ rank": [DDPRUN, "--standalone", "--nproc_per_node=3"] + hang +
                            [CXX_WORKER, "train", "200", "pause", "1", "10"],
        "ddprun, Python rank": [DDPRUN, "--standalone", "--nproc_per_node=3"] + hang +
                               [PY_WORKER, "200", "1", "0.01"],
        "torchrun, Python rank": TORCHRUN + ["--standalone", "--nproc_per_node=3",
                                             "--max_restarts=1", "--monitor_interval=0.1",
                                             PY_WORKER, "200", "1", "0.01"],
    }
    give_up = 3 * TIMEOUT_S + 10
    results = {name: [] for name in cases}
    with tempfile.TemporaryDirectory(prefix="ddprun_hang_") as scratch:
        # torchrun gives its workers no progress file: the same worker writes to a scratch one.
        env = dict(os.environ, DDPRUN_PROGRESS_FILE=os.path.join(scratch, "progress"))
        for run in range(runs):
            for name, command in cases.items():  # interleaved
                if name.startswith("torchrun") and run >= max(1, runs // 3):
                    continue  # each of its runs takes the whole give-up time
                results[name].append(stamped_run(command, env, give_up))
    print(f"--hang_timeout={TIMEOUT_S} s; time from the rank's stop to the report naming it:")
    for name, seconds in results.items():
        caught = [s for s in seconds if s is not None]
        if not caught:
            print(f"  {name:24s} not detected in {len(seconds)} run(s) of {give_up:.0f} s each "
                  "(it has no hang detection: the job waits for the collective timeout)")
            continue
        print(f"  {name:24s} median {median(caught):.3f} s, {median(caught) - TIMEOUT_S:+.3f} s "
              f"past the timeout (min {min(caught):.3f}, max {max(caught):.3f}, "
              f"n={len(caught)} of {len(seconds)})")


def allreduce_4k_us(with_progress):
    flags = ["--hang_timeout=600"] if with_progress else []
    out = subprocess.run([DDPRUN, "--standalone", "--nproc_per_node=2"] + flags +
                         [ALLREDUCE, "4096", "4096"], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        fields = line.split("]: ", 1)[-1].split()
        if fields and fields[0] == "4096":
            return float(fields[3])
    raise RuntimeError("no 4096-byte row in ddp-allreduce-bench's output:\n" + out)


def cost(runs):
    without, with_ = [], []
    for _ in range(runs):  # interleaved
        without.append(allreduce_4k_us(False))
        with_.append(allreduce_4k_us(True))
    m0, m1 = median(without), median(with_)
    print("4 KiB all-reduce, 2 ranks, shared memory (each run's own average over its "
          "iterations):")
    print(f"  without progress counting  median {m0:.2f} us (min {min(without):.2f}, max "
          f"{max(without):.2f}, n={runs})")
    print(f"  with --hang_timeout        median {m1:.2f} us (min {min(with_):.2f}, max "
          f"{max(with_):.2f}, n={runs})")
    print(f"  difference {m1 - m0:+.2f} us ({(m1 / m0 - 1) * 100:+.1f}%); the runs without it "
          f"spread {max(without) - min(without):.2f} us")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    for path, what in [(DDPRUN, "ddprun"), (CXX_WORKER, "collectives_worker"),
                       (ALLREDUCE, "ddp-allreduce-bench")]:
        require(path, what)
    detection(runs)
    cost(max(runs, 9))


if __name__ == "__main__":
    main()
