#!/bin/sh
# Invalid UTF-8 and NUL bytes on both streams.
echo $$ >> "$PIDFILE"
printf 'ok\n\377\376 bad\nnul\000byte\n'
printf 'err\000\377\n' >&2
