#!/bin/sh
# Leaves a real daemon behind: a new session (setsid), every fd closed or on /dev/null, and a
# double fork, so neither the process group nor the output pipes lead to it.
echo $$ >> "$PIDFILE"
setsid sh -c 'sh -c "echo \$\$ >> \"$PIDFILE\"; exec sleep 1000" </dev/null >/dev/null 2>&1 &' </dev/null >/dev/null 2>&1 &
# Wait until the daemon has written its pid (bounded).
i=0
while [ "$(wc -l < "$PIDFILE")" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i+1)); done
echo "leader exits"
