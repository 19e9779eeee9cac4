#!/bin/sh
# Prints the summary, then ignores SIGTERM (its `sleep` children inherit the ignore): only SIGKILL
# stops this group.
trap '' TERM
echo $$ >> "$PIDFILE"
echo "=== 1 passed in 0.01s ==="
while :; do sleep 1; done
