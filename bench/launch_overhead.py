"""Launch overhead: `--standalone --nproc_per_node=N --no_python /bin/true`, ddprun beside the
machine's floor (bench/spawn_floor.c: fork, exec and wait for the same N processes) and beside
torchrun, in the same run.

Prints, for 4 and 256 workers, the medians of interleaved runs (floor, ddprun, floor, ...) with
their range and ddprun's ratio to the floor; torchrun's median at 4 workers; the launcher's peak
memory; and `ddprun --version` beside /bin/true.
Usage: /usr/bin/python3 bench/launch_overhead.py [RUNS]
"""
import sys

from common import (DDPRUN, SPAWN_FLOOR, TORCHRUN, median, peak_rss_mib, require, torch2_python,
                    torchrun2,
                    wall_seconds)


def args(workers):
    return ["--standalone", f"--nproc_per_node={workers}", "--no_python", "/bin/true"]


def ms(values):
    return (f"median {median(values) * 1000:8.2f} ms (min {min(values) * 1000:.2f}, "
            f"max {max(values) * 1000:.2f}, n={len(values)})")


def interleaved(commands, runs):
    """Each command's wall times, the commands taking turns."""
    for command in commands:
        wall_seconds(command)  # warms the page cache
    times = [[] for _ in commands]
    for _ in range(runs):
        for i, command in enumerate(commands):
            times[i].append(wall_seconds(command))
    return times


def against_floor(workers, runs):
    floor, ddprun = interleaved([[SPAWN_FLOOR, "launch", str(workers), "/bin/true"],
                                 [DDPRUN] + args(workers)], runs)
    print(f"{workers:4d} workers  floor  {ms(floor)}")
    print(f"{workers:4d} workers  ddprun {ms(ddprun)}   {median(ddprun) / median(floor):.2f}x the "
          f"floor (target <= 1.5x)")
    return median(ddprun)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    require(DDPRUN, "ddprun")
    require(SPAWN_FLOOR, "spawn-floor (bench/spawn_floor.c)")
    version, true = interleaved([[DDPRUN, "--version"], ["/bin/true"]], runs)
    print(f"ddprun --version {ms(version)}   (/bin/true {median(true) * 1000:.2f} ms; "
          f"target < 5 ms)")
    ddprun_4 = against_floor(4, runs)
    against_floor(256, max(3, runs // 4))
    memory = median([peak_rss_mib([DDPRUN] + args(4)) for _ in range(5)])
    print(f"ddprun peak memory {memory:.1f} MiB (target < 10 MiB)")
    require(TORCHRUN[1], "torchrun for Debian's torch (bench/torchrun_debian.py)")
    # torchrun's default monitor_interval is 5 s in 1.13; 0.1 s is the default since 2.4.
    for name, torchrun in (("torchrun 2.x", torchrun2(torch2_python())),
                           ("torchrun 1.13", TORCHRUN + ["--monitor_interval=0.1"])):
        (times,) = interleaved([torchrun + args(4)], max(3, runs // 4))
        print(f"   4 workers  {name} {ms(times)}   ddprun is "
              f"{median(times) / ddprun_4:.0f}x faster; {name}'s peak memory "
              f"{median([peak_rss_mib(torchrun + args(4))]):.1f} MiB")

if __name__ == "__main__":
    main()
