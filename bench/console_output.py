"""Console output at full speed: 4 workers each write BYTES of 100-byte lines as fast as they
can; ddprun forwards them (with rank prefixes) to a console that discards them, through pipes
(ddprun's stdout is /dev/null) and through pseudo-terminals (ddprun runs on a terminal whose
reader discards what it shows). Printed: the wall time against the same writers writing to
/dev/null directly (and, for terminals, to such a terminal directly: a terminal is slow in
itself), against torchrun (whose workers write to the console themselves), and ddprun's peak
memory (VmHWM; goal: under 16 MiB).

  /usr/bin/python3 bench/console_output.py [RUNS] [BYTES]      (defaults: 3, 1 GiB)
"""
import os
import pty
import select
import subprocess
import sys
import time

from common import DDPRUN, TORCHRUN, median, require

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
BYTES = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 30
WORKERS = 4
WRITER = f"yes \"$(printf '%099d' 0)\" | head -c {BYTES}"


def peak_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def watch(process_pid, done):
    """Samples the process's peak memory until done() says it ended; returns the last seen."""
    peak = 0
    while not done():
        seen = peak_kib(process_pid)
        if seen:
            peak = seen
        time.sleep(0.05)
    return peak


def direct():
    start = time.perf_counter()
    writers = [subprocess.Popen(["/bin/sh", "-c", WRITER], stdout=subprocess.DEVNULL)
               for _ in range(WORKERS)]
    for writer in writers:
        writer.wait()
    return time.perf_counter() - start, None


def with_pipes(launcher):
    start = time.perf_counter()
    process = subprocess.Popen(launcher + [f"--nproc_per_node={WORKERS}", "--no_python",
                                           "/bin/sh", "-c", WRITER],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = watch(process.pid, lambda: process.poll() is not None)
    if process.returncode != 0:
        sys.exit(f"bench: {launcher[0]} exited {process.returncode}")
    return time.perf_counter() - start, peak


def on_terminal(command):
    """Runs command on a pseudo-terminal whose reader discards what it shows (a terminal is
    slow in itself: this reader's terminal is the same for every case that uses one)."""
    start = time.perf_counter()
    pid, master = pty.fork()
    if pid == 0:
        os.execv(command[0], command)
    peak = 0
    sampled = 0.0
    while True:
        if time.perf_counter() - sampled > 0.05:  # the reader must not be what is measured
            sampled = time.perf_counter()
            seen = peak_kib(pid)
            if seen:
                peak = seen
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                if not os.read(master, 1 << 20):
                    break
            except OSError:  # EIO: the terminal's last holder is gone
                break
    _, status = os.waitpid(pid, 0)
    os.close(master)
    if status != 0:
        sys.exit(f"bench: {command[0]} on a terminal exited with status {status}")
    return time.perf_counter() - start, peak


def direct_on_terminal():
    writers = " & ".join(["(" + WRITER + ")"] * WORKERS) + " & wait"
    seconds, _ = on_terminal(["/bin/sh", "-c", writers])
    return seconds, None


def main():
    require(DDPRUN, "ddprun")
    cases = {
        "direct to /dev/null": direct,
        "ddprun, pipes": lambda: with_pipes([DDPRUN]),
        "direct to a terminal": direct_on_terminal,
        "ddprun, terminals": lambda: on_terminal([DDPRUN, f"--nproc_per_node={WORKERS}",
                                                  "/bin/sh", "-c", WRITER]),
        "torchrun": lambda: with_pipes(TORCHRUN + ["--monitor_interval=0.1"]),
    }
    results = {name: [] for name in cases}
    for _ in range(RUNS):  # interleaved: drift on this shared machine hits every case alike
        for name, case in cases.items():
            results[name].append(case())
    total_mib = WORKERS * BYTES / (1 << 20)
    base = median([seconds for seconds, _ in results["direct to /dev/null"]])
    terminal_base = median([seconds for seconds, _ in results["direct to a terminal"]])
    print(f"{WORKERS} workers x {BYTES >> 20} MiB of 100-byte lines, {RUNS} runs, medians "
          "(min..max):")
    for name, runs in results.items():
        seconds = [s for s, _ in runs]
        line = (f"  {name:22s} {median(seconds):7.2f} s ({min(seconds):.2f}..{max(seconds):.2f})"
                f"  {total_mib / median(seconds):7.0f} MiB/s  {median(seconds) / base:5.2f}x direct")
        if "terminal" in name:
            line += f"  {median(seconds) / terminal_base:5.2f}x direct to a terminal"
        peaks = [p for _, p in runs if p is not None]
        if peaks and name.startswith("ddprun"):
            line += f"  peak {max(peaks) / 1024:.1f} MiB (VmHWM, largest of the runs)"
        print(line)


if __name__ == "__main__":
    main()
