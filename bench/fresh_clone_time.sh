#!/usr/bin/env bash
# How long a new user waits: `./run.sh demo` (to the first training line) or `./run.sh test` (to
# its end) in a fresh clone of this repository, with an empty ccache, each output line stamped
# with the seconds since the clone began. What it cannot make fresh is the machine: packages
# already installed are not installed again (run it on a fresh machine for that figure).
#
#   bench/fresh_clone_time.sh demo|test [LOG]   (LOG: keep the stamped output there too)
set -euo pipefail
mode=${1:-}
if [ "$mode" != demo ] && [ "$mode" != test ]; then
  echo "usage: bench/fresh_clone_time.sh demo|test [LOG]" >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=${2:-$work/log}
start=$(date +%s.%N)
git clone -q "$repo" "$work/repo"
mkdir "$work/ccache"
status=0
(cd "$work/repo" && CCACHE_DIR="$work/ccache" ./run.sh "$mode" 2>&1) |
  while IFS= read -r line; do
    printf '%8.1f %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$line"
  done | tee "$log" || status=$?
first=$(grep -m1 '\[rank0\]: epoch' "$log" | awk '{print $1}' || true)
echo "fresh_clone_time: $mode ended after $(echo "$(date +%s.%N) - $start" | bc | cut -d. -f1) s" \
  "(first training line at ${first:-none} s), status $status" >&2
exit "$status"
