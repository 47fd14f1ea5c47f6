"""Rendezvous at scale: N simulated agents (bench/rendezvous_scale.cc, many per process) join one
job on one ddprund. Per run, a fresh daemon and three figures: from the last join to every node
holding its round; from one agent's worker-failure report to every node holding its restart; from
that report to every node holding its next round (each re-joins the moment its restart arrives);
and the daemon's peak memory. torchrun cannot be run at this scale here; its published figures
are quoted in bench/RESULTS.md.

Usage: /usr/bin/python3 bench/rendezvous_scale.py [RUNS] [--sizes=1024,4096]
                                                  [--ddprund=LABEL=PATH ...] [--scrape] [--etcd]

With several --ddprund (say a build before a change and one after), the runs are interleaved:
for each size, run 1 of each daemon, then run 2 of each, and so on, so that a drift of the
machine falls on all of them alike. Default: this tree's build, every size of SIZES.

--scrape: each daemon is also run, interleaved, with --metrics-port and a scraper that GETs
/metrics once a second for the whole run (Prometheus at a 1 s scrape_interval), as
"LABEL+scrape": what serving the metrics costs the control plane.

--etcd: each daemon is also run, interleaved, with --store=etcd on a 3-member etcd cluster
(Debian's etcd-server, started once; each run under a prefix of its own), as "LABEL on etcd":
the job's leader key and its store keys in etcd (issue 29's goals: a 16k round under 3 s, at most
2x the in-memory store at 1k).
"""
import argparse
import os
import subprocess
import sys
import threading
import itertools
import urllib.request

from common import ROOT, median, require
from etcd_daemons import ETCD, EtcdMembers

BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"))
DDPRUND = os.path.join(BUILD, "bin", "ddprund")
GENERATOR = os.path.join(BUILD, "bin", "rendezvous_scale")
SIZES = [1024, 2048, 4096, 8192, 16384]
# The goals: the first two from the multi-node work, the last from issue 18.
TARGETS = {1024: "round < 1 s", 4096: "round < 3 s",
           16384: "round and restart each < 2 s, ddprund < 512 MiB"}
FIGURES = ["round_s", "restart_s", "rejoin_s"]


def peak_memory_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def scrape_every_second(port, stop):
    """GETs /metrics once a second until `stop` is set; the bench fails if a scrape does."""
    while not stop.wait(1.0):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            answer.read()


_etcd_runs = itertools.count()


def one_run(ddprund, nodes, scrape=False, etcd=None):
    """A fresh daemon, N agents: ({figure: seconds}, daemon peak MiB). With `scrape`, the
    daemon serves its metrics and is scraped every second meanwhile; with `etcd` (EtcdMembers),
    it keeps its jobs there, under a prefix no other run uses."""
    store = [] if etcd is None else [
        "--store=etcd", f"--etcd-endpoints={etcd.endpoints}",
        f"--etcd-prefix=/bench/{next(_etcd_runs)}/"]
    daemon = subprocess.Popen([ddprund, "--port=0"] + (["--metrics-port=0"] if scrape else []) +
                              store, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stop = threading.Event()
    scraper = None
    try:
        if scrape:
            metrics = daemon.stdout.readline()
            port = int(metrics.rsplit(":", 1)[1].split("/")[0])
            scraper = threading.Thread(target=scrape_every_second, args=(port, stop))
            scraper.start()
        line = daemon.stdout.readline()
        if not line.startswith("ddprund listening on "):
            sys.exit(f"bench: ddprund did not start: {line!r}")
        address = line.split()[-1]
        result = subprocess.run([GENERATOR, address, str(nodes)], capture_output=True, text=True,
                                timeout=900)
        if result.returncode != 0:
            sys.exit(f"bench: the load generator failed: {result.stderr.strip()}")
        fields = result.stdout.split()
        figures = {name: float(fields[fields.index(name) + 1]) for name in FIGURES}
        return figures, peak_memory_mib(daemon.pid)
    finally:
        stop.set()
        if scraper:
            scraper.join()
        daemon.terminate()
        daemon.wait(timeout=30)


def spread(values, scale=1000.0, unit="ms"):
    return (f"{median(values) * scale:.1f} {unit} (min {min(values) * scale:.1f}, "
            f"max {max(values) * scale:.1f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES))
    parser.add_argument("--ddprund", action="append", default=[],
                        help="LABEL=PATH of a ddprund to measure; may be repeated")
    parser.add_argument("--scrape", action="store_true",
                        help="also run each daemon scraped every second, interleaved")
    parser.add_argument("--etcd", action="store_true",
                        help="also run each daemon on a 3-member etcd, interleaved")
    args = parser.parse_args()
    daemons = [tuple(d.split("=", 1)) + (False, False) for d in args.ddprund] or [
        ("this build", DDPRUND, False, False)]
    if args.scrape:
        daemons += [(label + "+scrape", path, True, False) for label, path, _, _ in daemons]
    if args.etcd:
        require(ETCD, "etcd (Debian's etcd-server)")
        daemons += [(label + " on etcd", path, scrape, True)
                    for label, path, scrape, _ in daemons]
    for label, path, _, _ in daemons:
        require(path, f"ddprund ({label})")
    require(GENERATOR, "the load generator (bench/rendezvous_scale.cc)")
    sizes = [int(n) for n in args.sizes.split(",")]
    etcd = EtcdMembers(3) if args.etcd else None
    try:
        for nodes in sizes:
            measure_size(nodes, daemons, args.runs, etcd)
    finally:
        if etcd:
            etcd.close()


def measure_size(nodes, daemons, runs, etcd):
    """RUNS interleaved runs of each daemon at N agents, and a line of figures for each."""
    samples = {label: [] for label, _, _, _ in daemons}
    for _ in range(runs):
        for label, path, scrape, on_etcd in daemons:
            samples[label].append(one_run(path, nodes, scrape, etcd if on_etcd else None))
    for label, _, _, _ in daemons:
        figures = samples[label]
        memory = [m for _, m in figures]
        text = "   ".join(f"{name[:-2]} {spread([f[name] for f, _ in figures])}"
                           for name in FIGURES)
        target = f"   (target: {TARGETS[nodes]})" if nodes in TARGETS else ""
        print(f"N={nodes:5d} {label:>17}  {text}   ddprund peak "
              f"{spread(memory, 1.0, 'MiB')}  n={len(figures)}{target}", flush=True)

if __name__ == "__main__":
    main()
