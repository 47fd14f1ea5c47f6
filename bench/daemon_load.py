"""The rendezvous daemon under load: one real ddprund on 127.0.0.1 (with a token, as a daemon
runs), driven by bench/daemon_load/: probes of memory per job, adopted round slot, stream and
pending wait on the fresh daemon, then good jobs and store clients alone (the baseline), then
beside oversized, malformed, unauthenticated and vanishing clients (the mix). The daemon's RSS,
threads, open fds and CPU time are sampled every 100 ms from /proc throughout, and for --idle-s
seconds after the load stops (is memory released, or at least no longer growing?).

Usage: /usr/bin/python3 bench/daemon_load.py [--mix-s=60] [--baseline-s=10] [--idle-s=10]
           [-- FLAGS FOR daemon_load ...]
"""
import argparse
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time

from common import ROOT, require

BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"))
DDPRUND = os.path.join(BUILD, "bin", "ddprund")
GENERATOR = os.path.join(BUILD, "bin", "daemon_load")


TICKS = os.sysconf("SC_CLK_TCK")


def proc_sample(pid):
    """(VmRSS KiB, VmHWM KiB, threads, open fds, CPU s) of pid, or None once it is gone."""
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                fields[key] = value.split()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/stat") as stat:
            times = stat.read().rsplit(")", 1)[1].split()[11:13]  # utime, stime
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields["VmRSS"][0]), int(fields["VmHWM"][0]), int(fields["Threads"][0]), fds,
            sum(int(t) for t in times) / TICKS)


def thread_cpu(pid):
    """[(CPU s, tid, name)] of every thread of pid, busiest first."""
    threads = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                head, tail = stat.read().rsplit(")", 1)
            name = head.split("(", 1)[1]
            cpu = sum(int(t) for t in tail.split()[11:13]) / TICKS
        except (FileNotFoundError, ProcessLookupError):
            continue
        threads.append((cpu, int(tid), name))
    return sorted(threads, reverse=True)


class Sampler(threading.Thread):
    """Samples the daemon every 100 ms; `mark` names the phase the next samples belong to."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.samples = []  # (time, phase, rss, hwm, threads, fds, cpu)
        self.phase = "start"
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            sample = proc_sample(self.pid)
            if sample is None:
                self.samples.append((time.monotonic(), self.phase, None, None, None, None, None))
                return
            self.samples.append((time.monotonic(), self.phase, *sample))
            self.stop.wait(0.1)

    def mark(self, phase):
        self.phase = phase


def phase_rows(samples):
    """Per phase, in order: (phase, seconds, rss first, rss max, rss last, threads max, fds max,
    daemon CPU use in cores)."""
    rows = []
    for phase in dict.fromkeys(s[1] for s in samples):
        mine = [s for s in samples if s[1] == phase and s[2] is not None]
        if not mine:
            continue
        seconds = mine[-1][0] - mine[0][0]
        cores = (mine[-1][6] - mine[0][6]) / seconds if seconds > 0 else 0.0
        rows.append((phase, seconds, mine[0][2], max(s[2] for s in mine), mine[-1][2],
                     max(s[4] for s in mine), max(s[5] for s in mine), cores))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mix-s", type=float, default=60)
    parser.add_argument("--baseline-s", type=float, default=10)
    parser.add_argument("--idle-s", type=float, default=10)
    parser.add_argument("extra", nargs="*", help="more daemon_load flags, after --")
    args = parser.parse_args()
    require(DDPRUND, "ddprund")
    require(GENERATOR, "the load generator (bench/daemon_load/)")

    with tempfile.TemporaryDirectory(prefix="daemon_load-") as work:
        token_file = os.path.join(work, "token")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        log_path = os.path.join(work, "ddprund.log")
        log = open(log_path, "w")
        daemon = subprocess.Popen([DDPRUND, "--bind=127.0.0.1", "--port=0",
                                   f"--token-file={token_file}"],
                                  stdout=subprocess.PIPE, stderr=log, text=True)
        generator = None
        try:
            line = daemon.stdout.readline()
            if not line.startswith("ddprund listening on "):
                sys.exit(f"bench: ddprund did not start: {line!r}")
            address = line.split()[-1]
            sampler = Sampler(daemon.pid)
            sampler.start()
            command = [GENERATOR, f"--target={address}", f"--token_file={token_file}",
                       f"--daemon_pid={daemon.pid}", f"--baseline_s={args.baseline_s}",
                       f"--mix_s={args.mix_s}", *args.extra]
            print("bench:", " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
                                     for c in command), flush=True)
            started = time.monotonic()
            generator = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            report = []
            events = {}
            for out in generator.stdout:
                if out.startswith("@event "):
                    name = out.split()[1]
                    events[name] = time.monotonic() - started
                    sampler.mark(name)
                    print(f"bench: {events[name]:6.1f} s  {name}", flush=True)
                else:
                    report.append(out)
            generator_status = generator.wait(timeout=60)
            load_end = proc_sample(daemon.pid)
            sampler.mark("idle")
            time.sleep(args.idle_s)
            idle_end = proc_sample(daemon.pid)
            sampler.stop.set()
            sampler.join(timeout=5)
            alive = daemon.poll() is None

            sys.stdout.write("".join(report))
            print(f"\nload generator exit status {generator_status}; daemon "
                  f"{'alive' if alive else f'EXITED with {daemon.returncode}'}")
            print("\nThe daemon, sampled every 100 ms (VmRSS MiB; threads; open fds; CPU in "
                  "cores of the machine's 2):\n")
            print("| phase (from the event) | s | RSS first | RSS max | RSS last | threads max "
                  "| fds max | daemon CPU |\n| --- | --- | --- | --- | --- | --- | --- | --- |")
            for phase, seconds, first, peak, last, threads, fds, cores in phase_rows(
                    sampler.samples):
                print(f"| {phase} | {seconds:.1f} | {first / 1024:.1f} | {peak / 1024:.1f} | "
                      f"{last / 1024:.1f} | {threads} | {fds} | {cores:.2f} |")
            if load_end and idle_end:
                print(f"\nRSS when the load ended {load_end[0] / 1024:.1f} MiB, after "
                      f"{args.idle_s:.0f} s idle {idle_end[0] / 1024:.1f} MiB "
                      f"({(idle_end[0] - load_end[0]) / 1024:+.1f}); peak (VmHWM) "
                      f"{idle_end[1] / 1024:.1f} MiB; threads {load_end[2]} -> {idle_end[2]}; "
                      f"fds {load_end[3]} -> {idle_end[3]}")
            print("\nThe daemon's busiest threads (CPU s over the whole run):")
            for cpu, tid, name in thread_cpu(daemon.pid)[:6]:
                print(f"  {name:18s} tid {tid}: {cpu:.1f} s")
            log.flush()
            lines = sum(1 for _ in open(log_path, errors="replace"))
            print(f"daemon log (stderr, default level): {os.path.getsize(log_path) / 1e6:.1f} MB, "
                  f"{lines} lines")
        finally:
            if generator is not None and generator.poll() is None:
                generator.kill()
                generator.wait()
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGTERM)
                try:
                    daemon.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    print("bench: ddprund did not stop within 30 s of SIGTERM; killed")
                    daemon.kill()
                    daemon.wait()
            print(f"ddprund exit status after SIGTERM: {daemon.returncode}")
            log.close()


if __name__ == "__main__":
    main()
