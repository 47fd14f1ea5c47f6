"""Training throughput: ddprun's DistributedDataParallel (ddp-mlp-bench) beside PyTorch DDP (the
anchor's ddp_mlp.py under torchrun, gloo), same MLP, batch and optimizer, in the same run: samples/s
at world size 1 and 2, ddprun's step time with the all-reduce overlapping backward and not, and
with its CPU buckets in ordinary memory (through the ring) instead of a registered buffer (read
directly by the peer). Each configuration runs three times, interleaved with the others; the
median is reported, with the spread of the world-2 ratio.

PyTorch runs twice: as the anchor runs it, and with OpenBLAS told to use the kernels ddprun's
runtime chooses for this CPU (OPENBLAS_CORETYPE; see runtime/src/ops/cpu/blas_kernels.h), which
separates what the kernels are worth from what the rest of ddprun is worth.

Both run STEPS timed steps (default 200 here, the anchor's own default is 50: this machine's
noise needs longer runs).

Usage: /usr/bin/python3 bench/ddp_training.py
"""
import os
import re
import subprocess

from common import ANCHORS, DDPRUN, ROOT, TORCHRUN, require

os.environ.setdefault("STEPS", "200")

BENCH = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"), "bin", "ddp-mlp-bench")
ANCHOR = os.path.join(ANCHORS, "ddp_mlp.py")


def parse(output):
    match = re.search(r"step_ms=([\d.]+) samples_per_s=([\d.]+)", output)
    if not match:
        raise SystemExit(f"bench: no result in {output!r}")
    return float(match.group(1)), float(match.group(2))


def ddp(world, overlap=True, registered=True):
    # One BLAS thread per rank, as the anchor runs PyTorch (OMP_NUM_THREADS=1).
    env = dict(os.environ, OVERLAP="1" if overlap else "0", OMP_NUM_THREADS="1",
               REGISTERED="1" if registered else "0")
    out = subprocess.run([DDPRUN, "--standalone", f"--nproc_per_node={world}", BENCH], env=env,
                         check=True, capture_output=True, text=True).stdout
    print("   " + out.strip().split("]: ", 1)[-1])
    return parse(out)


def best_openblas_core():
    """The kernels ddprun's runtime makes OpenBLAS use on a CPU it does not recognize."""
    with open("/proc/cpuinfo") as cpuinfo:
        flags = set(next(line for line in cpuinfo if line.startswith("flags")).split())
    if {"avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl"} <= flags:
        return "SkylakeX"
    return "Haswell" if {"avx2", "fma"} <= flags else None


def torch_ddp(world, core=None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if core:
        env["OPENBLAS_CORETYPE"] = core
    out = subprocess.run(TORCHRUN + ["--standalone", f"--nproc_per_node={world}",
                                     "--monitor_interval=0.1", ANCHOR], env=env, check=True,
                         capture_output=True, text=True).stdout
    print("   " + out.strip())
    return parse(out)


def median(results):
    """The run with the median samples/s (this machine is noisy)."""
    return sorted(results, key=lambda r: r[1])[len(results) // 2]


def main():
    require(DDPRUN, "ddprun")
    require(BENCH, "ddp-mlp-bench")
    runs = 3
    core = best_openblas_core()
    rows = []
    ratios = []  # world 2, run by run: ddprun / PyTorch on the same kernels
    ring = []    # world 2, buckets in ordinary memory
    for world in (1, 2):
        mine, theirs, tuned = [], [], []
        for _ in range(runs):  # interleaved, so that all see the same machine
            mine.append(ddp(world))
            theirs.append(torch_ddp(world))
            tuned.append(torch_ddp(world, core) if core else theirs[-1])
            if world == 2:
                ring.append(ddp(world, registered=False))
                ratios.append(mine[-1][1] / tuned[-1][1])
        rows.append((world, median(mine), median(theirs), median(tuned)))
    no_overlap = median([ddp(2, overlap=False) for _ in range(runs)])
    ring = median(ring)
    print(f"{'world':>5} {'ddp samples/s':>14} {'torch samples/s':>16} {'ratio':>6} "
          f"{'torch, OPENBLAS_CORETYPE=' + str(core):>34} {'ratio':>6}")
    for world, mine, theirs, tuned in rows:
        print(f"{world:>5} {mine[1]:>14.1f} {theirs[1]:>16.1f} {mine[1] / theirs[1]:>6.2f} "
              f"{tuned[1]:>34.1f} {mine[1] / tuned[1]:>6.2f}")
    print(f"world 2 step time: overlap {rows[1][1][0]:.2f} ms, all-reduce after backward "
          f"{no_overlap[0]:.2f} ms, buckets through the ring {ring[0]:.2f} ms "
          f"({ring[1]:.1f} samples/s)")
    print(f"target: world 2 >= 1.5x PyTorch on the same kernels: "
          f"{rows[1][1][1] / rows[1][3][1]:.2f}x (run by run {min(ratios):.2f} to "
          f"{max(ratios):.2f}); as the anchor runs: {rows[1][1][1] / rows[1][2][1]:.2f}x")


if __name__ == "__main__":
    main()
