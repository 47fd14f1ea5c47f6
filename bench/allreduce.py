"""All-reduce bandwidth: ddprun's runtime (ddp-allreduce-bench) beside gloo (the anchor's
allreduce_gloo.py under torchrun), 2 ranks on this host, in the same run: with a registered buffer
(Communicator::AllocateShared: the ranks read each other's memory directly), with an ordinary
buffer (through the shared-memory ring) and with forced TCP. Prints the nccl-tests table of
each, then medians over the rounds of the ratios the targets are set in, with the bandwidth of
one plain memcpy per rank (all ranks at once, measured in the registered run) at each size: the
memory system's own limit, and the round trip of a cache line between the two cores
(core-pingpong) before each round: this machine has run the same build at a round trip near
100 ns and near 400 ns, and the shared-memory paths' figures differ by up to 5x between the two.

Rounds are interleaved (registered, ring, TCP, gloo; again), so slow minutes of this shared
machine fall on all of them alike.

Usage: /usr/bin/python3 bench/allreduce.py [RANKS [ROUNDS]]
"""
import os
import re
import subprocess
import sys

from common import ANCHORS, DDPRUN, ROOT, TORCHRUN, median, require

BENCH = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"), "bin", "ddp-allreduce-bench")
PINGPONG = os.path.join(os.path.dirname(BENCH), "core-pingpong")
GLOO = os.path.join(ANCHORS, "allreduce_gloo.py")
SIZES = [1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26]  # the gloo anchor's sizes


def run_ddp(ranks, transport, registered=False):
    env = dict(os.environ, DDPRUN_CPU_TRANSPORT=transport)
    out = subprocess.run([DDPRUN, "--standalone", f"--nproc_per_node={ranks}", BENCH, "4096",
                          str(1 << 26)] + (["registered"] if registered else []), env=env,
                         check=True, capture_output=True, text=True).stdout
    table = {}
    print(f"-- ddp, {transport}, {'registered' if registered else 'ordinary'} buffer")
    for line in out.splitlines():
        line = line.split("]: ", 1)[-1]
        print("   " + line)
        fields = line.split()
        if fields and fields[0].isdigit():
            table[int(fields[0])] = (float(fields[3]), float(fields[5]), int(fields[6]),
                                     float(fields[7]))
    return table


def run_gloo(ranks):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(TORCHRUN + ["--standalone", f"--nproc_per_node={ranks}",
                                     "--monitor_interval=0.1", GLOO], env=env, check=True,
                         capture_output=True, text=True).stdout
    table = {}
    print("-- gloo")
    for line in out.splitlines():
        match = re.search(r"bytes=(\d+) time_us=([\d.]+) .* busbw_GBps=([\d.]+)", line)
        if match:
            print("   " + line)
            table[int(match.group(1))] = (float(match.group(2)), float(match.group(3)))
    return table


def core_round_trip_ns():
    out = subprocess.run([PINGPONG], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"rtt_ns=([\d.]+)", out).group(1))


def spread(values):
    """'median (min to max)' of a list of ratios."""
    return f"{median(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def main():
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    require(DDPRUN, "ddprun")
    require(BENCH, "ddp-allreduce-bench")
    require(PINGPONG, "core-pingpong")
    runs = []
    round_trips = []
    for r in range(rounds):
        round_trips.append(core_round_trip_ns())
        print(f"== round {r + 1} of {rounds}: a cache line's round trip between the cores "
              f"{round_trips[-1]:.0f} ns")
        runs.append({"direct": run_ddp(ranks, "auto", registered=True),
                     "ring": run_ddp(ranks, "auto"), "tcp": run_ddp(ranks, "tcp"),
                     "gloo": run_gloo(ranks)})
    wrong = sum(row[2] for run in runs for key in ("direct", "ring", "tcp")
                for row in run[key].values())
    print(f"\nmedians over {rounds} round(s); ratios as median (min to max); a cache line's "
          f"round trip between the cores {median(round_trips):.0f} ns "
          f"({min(round_trips):.0f} to {max(round_trips):.0f})")
    print(f"{'bytes':>9} {'direct us':>10} {'direct GB/s':>11} {'ring GB/s':>10} "
          f"{'tcp GB/s':>9} {'gloo GB/s':>10} {'memcpy':>7}  {'direct/memcpy':<22}"
          f"{'direct/gloo':<28}{'direct/ring'}")
    for size in SIZES:
        def col(key, field):
            return median([run[key][size][field] for run in runs])
        to_copy = [run["direct"][size][1] / run["direct"][size][3] for run in runs]
        # Speed-ups from the times (the same bytes): gloo's busbw rounds to 0 at small sizes.
        to_gloo = [run["gloo"][size][0] / run["direct"][size][0] for run in runs]
        to_ring = [run["ring"][size][0] / run["direct"][size][0] for run in runs]
        print(f"{size:>9} {col('direct', 0):>10.1f} {col('direct', 1):>11.3f} "
              f"{col('ring', 1):>10.3f} {col('tcp', 1):>9.3f} {col('gloo', 1):>10.3f} "
              f"{col('direct', 3):>7.2f}  {spread(to_copy):<22}{spread(to_gloo):<28}"
              f"{spread(to_ring)}")
    big = 1 << 26
    print(f"targets at 64 MiB: direct busbw >= 75% of memcpy: "
          f"{spread([run['direct'][big][1] / run['direct'][big][3] for run in runs])}; "
          f">= 5x gloo: {spread([run['gloo'][big][0] / run['direct'][big][0] for run in runs])}; "
          f"4 KiB under 50 us: {median([run['direct'][4096][0] for run in runs]):.1f} us; "
          f"wrong elements: {wrong}")


if __name__ == "__main__":
    main()
