#!/usr/bin/env bash
# Runs every launcher and rendezvous benchmark, ddprun beside torchrun, after installing what
# they need (Debian's python3-torch, OpenBLAS, GNU time, etcd-server) and building ddprun. Not a
# test.
#   bench/run.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for package in python3-torch libopenblas-dev time etcd-server; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_if_needed apt-get update -q
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
fi
./run.sh build
echo "== launch overhead (4 x /bin/true)"
/usr/bin/python3 bench/launch_overhead.py "${1:-20}"
echo "== restart latency (4 workers, rank 1 fails once)"
/usr/bin/python3 bench/restart_latency.py "${1:-10}"
echo "== multi-node restart latency (2 agents x 2 workers, rank 1 fails once)"
/usr/bin/python3 bench/multinode_restart.py "${1:-10}"
echo "== rendezvous at scale (N simulated agents against one ddprund)"
/usr/bin/python3 bench/rendezvous_scale.py 3 --scrape
echo "== ddprund's metrics (a scrape of a job of N nodes: size and time to serve)"
/usr/bin/python3 bench/metrics_scrape.py 3
echo "== node-loss detection (kill -9 of one of three agents)"
/usr/bin/python3 bench/node_loss.py 5
echo "== daemons on etcd (kill -9 of the daemon leading a job: the other runs it on)"
/usr/bin/python3 bench/daemon_failover.py "${1:-5}"
echo "== daemons on etcd (kill -9 of the host whose daemon leads a job: the next round without it)"
/usr/bin/python3 bench/host_failover.py "${1:-5}"
/usr/bin/python3 bench/etcd_v3_failover.py "${1:-5}"
echo "== hang detection (a rank stops: time to the report; the cost of counting progress)"
/usr/bin/python3 bench/hang_detection.py "${1:-6}"
echo "== a PyTorch script's restart (warm workers with --python_preload=torch, and without)"
/usr/bin/python3 bench/python_restart.py "${1:-5}"
echo "== what the Python hook costs a PyTorch script's collective (hang and straggler detection)"
/usr/bin/python3 bench/python_hook_cost.py "${1:-5}"
echo "== all-reduce bandwidth (2 ranks: shared memory, TCP, gloo)"
/usr/bin/python3 bench/allreduce.py 2 3
echo "== training throughput (ddprun's DDP beside PyTorch DDP, world 1 and 2)"
/usr/bin/python3 bench/ddp_training.py
# Hosts as network namespaces: root only.
if [ "$(id -u)" -eq 0 ]; then
  echo "== a job on many hosts from one command (submit to every worker running)"
  /usr/bin/python3 bench/host_submit.py "${1:-10}"
  echo "== a spare host takes a lost host's place (kill -9 of its ddprund to every rank running)"
  /usr/bin/python3 bench/spare_host.py "${1:-5}"
fi
