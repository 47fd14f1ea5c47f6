"""Launch overhead: `--standalone --nproc_per_node=4` of /bin/true, ddprun beside torchrun.

Prints the median wall time and the launcher's peak memory for each, and the ratios.
Usage: /usr/bin/python3 bench/launch_overhead.py [RUNS]
"""
import sys

from common import ANCHORS, DDPRUN, TORCHRUN, median, peak_rss_mib, require, wall_seconds

ARGS = ["--standalone", "--nproc_per_node=4", "--no_python", "/bin/true"]


def measure(name, command, runs):
    wall_seconds(command)  # warm the page cache
    walls = [wall_seconds(command) for _ in range(runs)]
    memory = median([peak_rss_mib(command) for _ in range(min(runs, 5))])
    print(f"{name:9s} wall median {median(walls) * 1000:8.1f} ms   "
          f"(min {min(walls) * 1000:.1f}, max {max(walls) * 1000:.1f}, n={runs})   "
          f"peak memory {memory:6.1f} MiB")
    return median(walls), memory


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    require(DDPRUN, "ddprun")
    require(ANCHORS, "the anchors")
    ddp_wall, ddp_mem = measure("ddprun", [DDPRUN] + ARGS, runs)
    # torchrun's default monitor_interval is 5 s in 1.13; 0.1 s is the default since 2.4.
    tr_wall, tr_mem = measure("torchrun", TORCHRUN + ["--monitor_interval=0.1"] + ARGS,
                              max(3, runs // 4))
    print(f"ratio     wall: ddprun is {tr_wall / ddp_wall:.1f}x faster (target >= 50x); "
          f"memory: {tr_mem / ddp_mem:.1f}x less (target < 10 MiB: "
          f"{'met' if ddp_mem < 10 else 'missed'})")


if __name__ == "__main__":
    main()
