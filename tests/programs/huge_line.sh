#!/bin/sh
# One line of $BYTES bytes (default 3,000,000) without a newline inside, then a short line.
echo $$ >> "$PIDFILE"
head -c "${BYTES:-3000000}" /dev/zero | tr '\0' x
echo
echo end
