"""What a scrape of ddprund's /metrics costs for one job of N nodes of 8 ranks each (simulated
agents, bench/rendezvous_scale.cc in its `progress` mode: every rank has progress to show, as
under --hang_timeout): the page's size, the time to serve it (a full GET over loopback, as a
scraper sees it) and the same for /api/jobs (the live page's poll). A job of more than 1,024
ranks gets per-rank series only for its hung and straggling ranks (docs/metrics.md): these jobs
have none, so their pages hold the job's aggregates; /api/jobs?job=ID, what the live page polls
while it shows the job, holds every rank of a job of at most 256, else the ranks worth a look
(hung, stragglers, the 16 furthest behind: status_json.h's PageAbridgement). Per run a fresh daemon;
medians of 7 scrapes per run. torchrun serves no metrics (its health-check server is a stub), so
there is no anchor to run beside it: the figures are absolute, and the control plane's own
benchmark under a scraper is `bench/rendezvous_scale.py --scrape`.

Usage: /usr/bin/python3 bench/metrics_scrape.py [RUNS] [--sizes=1024,16384]
"""
import argparse
import os
import subprocess
import sys
import time
import urllib.request

from common import BIN, median, require

DDPRUND = os.path.join(BIN, "ddprund")
GENERATOR = os.path.join(BIN, "rendezvous_scale")
SCRAPES = 7


def fetch(port, path):
    """(seconds, bytes) of one GET of path."""
    start = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=120) as answer:
        body = answer.read()
    return time.perf_counter() - start, body


def start_daemon():
    daemon = subprocess.Popen([DDPRUND, "--port=0", "--metrics-port=0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    metrics = daemon.stdout.readline()
    listening = daemon.stdout.readline()
    if not metrics.startswith("ddprund metrics on ") or "listening on" not in listening:
        sys.exit(f"bench: ddprund did not start: {metrics!r} {listening!r}")
    port = int(metrics.rsplit(":", 1)[1].split("/")[0])
    return daemon, port, listening.split()[-1]


def one_run(nodes):
    daemon, port, address = start_daemon()
    generator = subprocess.Popen([GENERATOR, address, str(nodes), "16", "progress"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    try:
        if generator.stdout.readline().strip() != "progress sent":
            sys.exit(f"bench: the load generator failed: {generator.stderr.read().strip()}")
        # Until the daemon holds every rank's progress (the heartbeats are in flight).
        deadline = time.monotonic() + 300
        while True:
            _, body = fetch(port, "/metrics")
            reporting = f'\nddprun_job_ranks_reporting{{job="scale-{nodes}"}} {8 * nodes}\n'
            if reporting.encode() in body:
                break
            if time.monotonic() > deadline:
                sys.exit(f"bench: the page never showed all {8 * nodes} ranks")
            time.sleep(0.2)
        page = [fetch(port, "/metrics") for _ in range(SCRAPES)]
        jobs = [fetch(port, f"/api/jobs?job=scale-{nodes}") for _ in range(SCRAPES)]
        generator.stdin.write("\n")
        generator.stdin.flush()
        if generator.wait(timeout=600) != 0:
            sys.exit(f"bench: the load generator failed: {generator.stderr.read().strip()}")
        return {"page_s": median([s for s, _ in page]), "page_kib": len(page[0][1]) / 2**10,
                "jobs_s": median([s for s, _ in jobs]), "jobs_kib": len(jobs[0][1]) / 2**10}
    finally:
        if generator.poll() is None:
            generator.kill()
            generator.wait()
        daemon.terminate()
        daemon.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=3)
    parser.add_argument("--sizes", default="1024,16384")
    args = parser.parse_args()
    require(DDPRUND, "ddprund")
    require(GENERATOR, "the load generator (bench/rendezvous_scale.cc)")
    for nodes in [int(n) for n in args.sizes.split(",")]:
        runs = [one_run(nodes) for _ in range(args.runs)]

        def spread(key, scale, unit):
            values = [r[key] * scale for r in runs]
            return f"{median(values):.1f} {unit} (min {min(values):.1f}, max {max(values):.1f})"

        print(f"N={nodes:5d} ({8 * nodes} ranks)  /metrics {spread('page_kib', 1, 'KiB')} in "
              f"{spread('page_s', 1000, 'ms')}   /api/jobs {spread('jobs_kib', 1, 'KiB')} in "
              f"{spread('jobs_s', 1000, 'ms')}  n={len(runs)}", flush=True)


if __name__ == "__main__":
    main()
