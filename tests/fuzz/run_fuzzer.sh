#!/usr/bin/env bash
# run_fuzzer.sh FUZZER CORPUS FINDINGS [DICTIONARY]: one bounded run of one fuzz target, as the
# CTest test "fuzz: <target>" (tests/fuzz/CMakeLists.txt) makes it.
#
# It runs every input of the tree's CORPUS first (the seeds, and the regression inputs of every
# crash found before), then fuzzes for DDPRUN_FUZZ_SECONDS (default 20). New inputs go to a
# scratch directory, never into the tree. A crash, a leak, an input slower than 10 s or a run
# over 2 GiB fails the test; the input that did it is copied to FINDINGS/<target>/ and named.
# Ends with one line: executions, executions per second, new inputs, peak memory.
set -euo pipefail
fuzzer=$1 corpus=$2 findings=$3 dictionary=${4:-}
seconds=${DDPRUN_FUZZ_SECONDS:-20}
name=$(basename "$fuzzer")

work=$(mktemp -d "${TMPDIR:-/tmp}/ddprun_fuzz_run_XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/new" "$work/artifacts"

arguments=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
           -artifact_prefix="$work/artifacts/")
[ -z "$dictionary" ] || arguments+=(-dict="$dictionary")
# Stacks with function names and lines.
symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
[ -z "$symbolizer" ] || export ASAN_SYMBOLIZER_PATH="$symbolizer"
status=0
"$fuzzer" "${arguments[@]}" "$work/new" "$corpus" > "$work/log" 2>&1 || status=$?

stat() { sed -n "s/^stat::$1: *//p" "$work/log" | tail -n 1; }
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/log"
  mkdir -p "$findings/$name"
  for artifact in "$work"/artifacts/*; do
    [ -e "$artifact" ] || continue
    cp "$artifact" "$findings/$name/"
    echo "fuzz: $name: the input is $findings/$name/$(basename "$artifact")"
  done
  echo "fuzz: $name: FAILED (exit $status) after $(stat number_of_executed_units) executions"
  exit 1
fi
executions=$(stat number_of_executed_units)
echo "fuzz: $name: $executions executions in $seconds s ($(stat average_exec_per_sec)/s)," \
  "$(stat new_units_added) new inputs over $(find "$corpus" -type f | wc -l) seeds," \
  "peak $(stat peak_rss_mb) MiB"
