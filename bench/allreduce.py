"""All-reduce bandwidth: ddprun's runtime (ddp-allreduce-bench, shared memory and forced TCP)
beside gloo (the anchor's allreduce_gloo.py under torchrun), 2 ranks on this host, same run.
Prints the nccl-tests table of each and the ratios the issue sets targets for, with the
bandwidth of one plain memcpy per rank (all ranks at once) at each size: the memory system's
own limit.

Usage: /usr/bin/python3 bench/allreduce.py [RANKS]
"""
import os
import re
import subprocess
import sys

from common import ANCHORS, DDPRUN, ROOT, TORCHRUN, require

BENCH = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"), "bench", "ddp-allreduce-bench")
GLOO = os.path.join(ANCHORS, "allreduce_gloo.py")
SIZES = [1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26]  # the gloo anchor's sizes


def run_ddp(ranks, transport):
    env = dict(os.environ, DDPRUN_CPU_TRANSPORT=transport)
    out = subprocess.run([DDPRUN, "--standalone", f"--nproc_per_node={ranks}", BENCH, "4096",
                          str(1 << 26)], env=env, check=True, capture_output=True,
                         text=True).stdout
    table = {}
    print(f"-- ddp, {transport}")
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


def main():
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    require(DDPRUN, "ddprun")
    require(BENCH, "ddp-allreduce-bench")
    shm = run_ddp(ranks, "auto")
    tcp = run_ddp(ranks, "tcp")
    gloo = run_gloo(ranks)
    wrong = sum(row[2] for table in (shm, tcp) for row in table.values())
    print(f"{'bytes':>10} {'gloo busbw':>11} {'shm busbw':>10} {'x gloo':>7} {'tcp busbw':>10} "
          f"{'x gloo':>7} {'gloo us':>9} {'shm us':>8} {'memcpy':>8}")
    for size in SIZES:
        g_us, g_bw = gloo[size]
        s_us, s_bw, _, copy = shm[size]
        t_us, t_bw, _, _ = tcp[size]
        print(f"{size:>10} {g_bw:>11.3f} {s_bw:>10.3f} {s_bw / g_bw:>7.2f} {t_bw:>10.3f} "
              f"{t_bw / g_bw:>7.2f} {g_us:>9.1f} {s_us:>8.1f} {copy:>8.3f}")
    big = 1 << 26
    print(f"targets: shm busbw at 64 MiB >= 5x gloo: {shm[big][1] / gloo[big][1]:.2f}x; "
          f"4 KiB under 50 us: {shm[4096][0]:.1f} us; tcp >= gloo at 64 MiB: "
          f"{tcp[big][1] / gloo[big][1]:.2f}x; wrong elements: {wrong}")


if __name__ == "__main__":
    main()
