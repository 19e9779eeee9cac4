#!/bin/sh
# One line, then silence.
echo $$ >> "$PIDFILE"
echo "started"
exec sleep 1000
