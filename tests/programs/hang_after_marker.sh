#!/bin/sh
# Prints a pytest summary line (or $SUMMARY), then hangs: a test process whose teardown never
# returns. `exec` keeps the recorded pid.
echo $$ >> "$PIDFILE"
echo "collected 2 items"
echo "${SUMMARY:-=== 2 passed in 0.01s ===}"
exec sleep 1000
