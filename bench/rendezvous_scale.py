"""Rendezvous at scale: N simulated agents (bench/rendezvous_scale.cc, many per process) join one
job on one ddprund; time from the last join to every node holding its round, and the daemon's
peak memory. torchrun cannot be run at this scale here; its published figures are quoted in
bench/RESULTS.md.

Usage: /usr/bin/python3 bench/rendezvous_scale.py [RUNS]
"""
import os
import subprocess
import sys

from common import ROOT, median, require

BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"))
DDPRUND = os.path.join(BUILD, "rendezvous", "ddprund")
GENERATOR = os.path.join(BUILD, "bench", "rendezvous_scale")
SIZES = [64, 256, 1024, 4096]


def peak_memory_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one_run(nodes):
    """A fresh daemon, N agents: (seconds to the complete round, daemon peak MiB)."""
    daemon = subprocess.Popen([DDPRUND, "--port=0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        line = daemon.stdout.readline()
        if not line.startswith("ddprund listening on "):
            sys.exit(f"bench: ddprund did not start: {line!r}")
        address = line.split()[-1]
        result = subprocess.run([GENERATOR, address, str(nodes)], capture_output=True, text=True,
                                timeout=600)
        if result.returncode != 0:
            sys.exit(f"bench: the load generator failed: {result.stderr.strip()}")
        fields = result.stdout.split()
        round_s = float(fields[fields.index("round_s") + 1])
        return round_s, peak_memory_mib(daemon.pid)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    require(DDPRUND, "ddprund")
    require(GENERATOR, "the load generator (bench/rendezvous_scale.cc)")
    targets = {1024: 1.0, 4096: 3.0}
    for nodes in SIZES:
        samples = [one_run(nodes) for _ in range(runs)]
        seconds = [s for s, _ in samples]
        memory = max(m for _, m in samples)
        target = f"   (target < {targets[nodes]:.0f} s)" if nodes in targets else ""
        print(f"N={nodes:5d}  last join -> round complete: median {median(seconds) * 1000:7.1f} ms "
              f"(min {min(seconds) * 1000:.1f}, max {max(seconds) * 1000:.1f}, n={runs})   "
              f"ddprund peak {memory:6.1f} MiB{target}")


if __name__ == "__main__":
    main()
