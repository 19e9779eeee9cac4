#!/usr/bin/env bash
# `polyprof cache list` over an entry whose kernel name is 1 MB, beside the same over a 4 MB
# name, in one run (issue 43: a 40 MB name took over 60 s, the table's layout being quadratic
# in a cell's length). The table cuts a cell at 160 characters before layout, so both take
# about the time of reading the entries: the ratio 4 MB / 1 MB is the growth (linear: about 4,
# far below 16). Prints best-of-REPEATS seconds and the ratio; asserts nothing.
# Environment: PROFILE (release, default, or debug), REPEATS (5).
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${PROFILE:-release}"
repeats="${REPEATS:-5}"
flag=$([[ "$profile" == release ]] && echo --release || true)
cargo build --quiet $flag --bin polyprof --example cache_fill
target="${CARGO_TARGET_DIR:-target}/$profile"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Best of `repeats` wall seconds of `cache list` over the cache in $1.
best() {
  local best=999999 t0 t1 s
  for _ in $(seq "$repeats"); do
    t0=$(date +%s%N)
    "$target/polyprof" cache list --dir "$1" >"$work/out.txt"
    t1=$(date +%s%N)
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) / 1e9}')
    best=$(awk -v a="$best" -v b="$s" 'BEGIN {print (b < a) ? b : a}')
  done
  echo "$best"
}

echo "cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for mb in 1 4; do
  "$target/examples/cache_fill" "$work/c$mb" $((mb << 20))
done
one=$(best "$work/c1")
longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$work/out.txt")
four=$(best "$work/c4")
printf 'cache list, a 1 MB name: %8.3f s (longest line %s characters)\n' "$one" "$longest"
printf 'cache list, a 4 MB name: %8.3f s\n' "$four"
printf 'ratio 4 MB / 1 MB:       %8.2f (linear: about 4)\n' "$(awk -v a="$one" -v b="$four" 'BEGIN {print b / a}')"
