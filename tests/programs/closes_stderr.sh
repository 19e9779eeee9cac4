#!/bin/sh
# Closes stderr early and keeps writing stdout; the summary comes after the close.
echo $$ >> "$PIDFILE"
echo "to stderr" >&2
exec 2>&-
sleep 0.2
echo "after stderr closed"
echo "=== 1 passed in 0.20s ==="
