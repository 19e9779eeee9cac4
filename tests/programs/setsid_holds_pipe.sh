#!/bin/sh
# A descendant that calls setsid and sleeps on after the command, holding stdout open.
echo $$ >> "$PIDFILE"
setsid sh -c 'echo $$ >> "$PIDFILE"; exec sleep 1000' &
i=0
while [ "$(wc -l < "$PIDFILE")" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i+1)); done
echo "leader exits"
