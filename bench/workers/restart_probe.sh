#!/bin/sh
# A worker for measuring a restart, the same under ddprun, torchrun (--no_python) and
# bench/spawn_floor.c. In the first attempt rank 1 notes the time in $PROBE_DIR/fail and exits 1
# while the other ranks wait to be stopped; in the next attempt every rank notes the time it
# started in $PROBE_DIR/start.$RANK and exits 0. The restart took the last start minus the fail.
dir=${PROBE_DIR:?PROBE_DIR must name an empty directory}
if [ ! -e "$dir/fail" ]; then
  if [ "$RANK" = 1 ]; then
    date +%s.%N > "$dir/fail.part" && mv "$dir/fail.part" "$dir/fail"
    exit 1
  fi
  exec sleep 60
fi
date +%s.%N > "$dir/start.$RANK"
