#!/bin/sh
# Exits at once but leaves a grandchild that holds stdout open.
echo $$ >> "$PIDFILE"
sleep 1000 &
echo $! >> "$PIDFILE"
echo "leader exits"
