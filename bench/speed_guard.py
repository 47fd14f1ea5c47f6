"""The speed guard of `./run.sh test`: ddprun's launch and restart against the machine's floor,
measured in the same run, so that a slowdown fails the suite instead of going unnoticed.

Two measures, each as the ratio of ddprun's median to the floor's median over interleaved runs
(floor, ddprun, floor, ddprun, ...), so that a loaded or noisy machine slows both alike:
  launch   `ddprun --standalone --nproc_per_node=4 --no_python /bin/true`, wall time, against
           `spawn-floor launch 4 /bin/true` (bench/spawn_floor.c: fork, exec, wait)
  restart  4 workers of bench/workers/restart_probe.sh, rank 1 fails once: from its failure to
           the last worker restarted, against `spawn-floor restart 4` of the same probe
A measure over LIMIT (3x) is measured once more, with twice the runs, and fails only if it is
over again: one burst of load cannot fail it, a real slowdown does. Prints every figure; exits
1 when a measure fails. The last line is "speed guard: P passed, F failed" for run.sh's counts.

Usage: python3 bench/speed_guard.py [RUNS]   (BUILD_DIR: the build to measure, default build;
DDPRUN: another ddprun to measure against that build's floor, such as the wheel's)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DDPRUN, PROBE, SPAWN_FLOOR, median, one_restart, require, wall_seconds

LIMIT = 3.0
WORKERS = 4


def launch_pair():
    floor = wall_seconds([SPAWN_FLOOR, "launch", str(WORKERS), "/bin/true"])
    ddprun = wall_seconds([DDPRUN, "--standalone", f"--nproc_per_node={WORKERS}", "--no_python",
                           "/bin/true"])
    return floor, ddprun


def restart_pair():
    floor = one_restart([SPAWN_FLOOR, "restart", str(WORKERS), PROBE], WORKERS)
    ddprun = one_restart([DDPRUN, "--standalone", f"--nproc_per_node={WORKERS}",
                          "--max_restarts=1", "--no_python", PROBE], WORKERS)
    return floor, ddprun


def measure(pair, runs):
    pair()  # warms the page cache
    floors, ddpruns = zip(*(pair() for _ in range(runs)))
    return median(floors), median(ddpruns), floors, ddpruns


def spread(values):
    return f"{min(values) * 1000:.1f}-{max(values) * 1000:.1f}"


def check(name, pair, runs):
    """Whether the measure holds, after at most one confirming measurement."""
    for attempt, count in enumerate((runs, 2 * runs)):
        floor, ddprun, floors, ddpruns = measure(pair, count)
        ratio = ddprun / floor
        verdict = "ok" if ratio <= LIMIT else "over the limit"
        print(f"speed guard: {name:7s} ddprun {ddprun * 1000:6.2f} ms (runs {spread(ddpruns)}), "
              f"floor {floor * 1000:6.2f} ms (runs {spread(floors)}), n={count}: "
              f"{ratio:.2f}x the floor (limit {LIMIT:.0f}x) {verdict}", flush=True)
        if ratio <= LIMIT:
            return True
        if attempt == 0:
            print(f"speed guard: {name} measured once more to confirm", flush=True)
    return False


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    require(DDPRUN, "ddprun")
    require(SPAWN_FLOOR, "spawn-floor (bench/spawn_floor.c)")
    results = [check("launch", launch_pair, runs), check("restart", restart_pair, runs)]
    passed = sum(results)
    print(f"speed guard: {passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
