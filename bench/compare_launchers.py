"""Two builds of ddprun side by side: before and after a change to its start, in the same run.

Takes turns, RUNS times: the floor (bench/spawn_floor.c: fork, exec and wait for 4 `/bin/true`),
then each build's `--standalone --nproc_per_node=4 --no_python /bin/true`, then each build's
`--version`; prints each measure's median, range and ratio to the floor. Interleaving makes a
burst of load on this shared machine slow every command alike.

With a PROGRAM, also each build's `--standalone --nproc_per_node=2 PROGRAM [ARGS...]`: a job of
two real workers (bin/hello_store, whose ranks meet in the job's store, shows what starting the
store costs each build).

Usage: /usr/bin/python3 bench/compare_launchers.py BEFORE_BUILD_DIR AFTER_BUILD_DIR [RUNS
       [PROGRAM [ARGS...]]]
       (each a build directory with bin/ddprun; the floor is the after build's bin/spawn-floor)
"""
import os
import sys

from common import median, require, wall_seconds


def launch(ddprun):
    return [ddprun, "--standalone", "--nproc_per_node=4", "--no_python", "/bin/true"]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    before, after = (os.path.join(build, "bin", "ddprun") for build in sys.argv[1:3])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 31
    floor = os.path.join(sys.argv[2], "bin", "spawn-floor")
    for path in (before, after, floor):
        require(path, path)
    commands = {
        "floor, 4 x /bin/true": [floor, "launch", "4", "/bin/true"],
        "before: launch": launch(before),
        "after:  launch": launch(after),
        "before: --version": [before, "--version"],
        "after:  --version": [after, "--version"],
    }
    program = sys.argv[4:]
    if program:
        label = os.path.basename(program[0])
        for name, ddprun in (("before", before), ("after", after)):
            commands[f"{name}: {label} on 2"] = [ddprun, "--standalone",
                                                 "--nproc_per_node=2"] + program
    for command in commands.values():
        wall_seconds(command)  # warms the page cache
    times = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(wall_seconds(command))
    floor_median = median(times["floor, 4 x /bin/true"])
    for name, values in times.items():
        ratio = f"   {median(values) / floor_median:.2f}x the floor" if "launch" in name else ""
        print(f"{name:26s} median {median(values) * 1000:7.2f} ms "
              f"({min(values) * 1000:.1f}-{max(values) * 1000:.1f}, n={runs}){ratio}")


if __name__ == "__main__":
    main()
