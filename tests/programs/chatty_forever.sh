#!/bin/sh
# Never stops talking: only the overall timeout ends it.
echo $$ >> "$PIDFILE"
while :; do
  echo tick
  sleep 0.05
done
