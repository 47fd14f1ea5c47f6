#!/bin/sh
# Worker for the node-loss benchmark: records when it started in a world of WORLD_SIZE, then
# exits 0 in a world of $DONE_WORLD workers, else waits to be stopped.
out=${PROBE_DIR:?}
date +%s.%N > "$out/start.$WORLD_SIZE.$RANK.$$"
[ "$WORLD_SIZE" = "${DONE_WORLD:?}" ] && exit 0
exec sleep 600
