#!/usr/bin/env bash
# Peak memory of the VTune parser against the ncu parser's, side by side: a VTune CPU hotspots
# CSV (the real grappolo function report's rows, replicated) and an ncu raw page (the real H200
# raw page's launches, IDs renumbered) of about the same size, each parsed by `polyprof parse`
# (table, and --json streamed). Prints peak RSS, its ratio to the file size (target for VTune:
# <= 4x, as the ncu parser is) and the time; every figure is the median of REPEATS (default 3)
# separate processes.
# Usage: [REPEATS=N] [PROFILE=release|debug] scripts/bench-vtune-parse.sh [MEGABYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
megabytes="${1:-100}"
repeats="${REPEATS:-3}"
profile="${PROFILE:-release}"
if [ "$profile" = release ]; then
  cargo build --quiet --release --bin polyprof
else
  cargo build --quiet --bin polyprof
fi
polyprof="${CARGO_TARGET_DIR:-target}/$profile/polyprof"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Replicate the data rows of a CSV up to MEGABYTES: `gen SRC OUT KIND` (KIND vtune: rows after
# the header line; ncu: the quoted raw-page rows after the header and units row, IDs renumbered).
python3 - "$megabytes" "$work" <<'PY'
import re, sys
megabytes, work = int(sys.argv[1]), sys.argv[2]
target = megabytes * 1_000_000

def fill(out, head, rows, renumber):
    with open(out, "w") as f:
        f.write(head)
        size, n = len(head), 0
        while size < target:
            row = rows[n % len(rows)]
            if renumber:
                row = re.sub(r'^"\d+"', f'"{n}"', row, count=1)
            f.write(row)
            size += len(row)
            n += 1

lines = open("tests/fixtures/vtune/grappolo-friendster-t192-dram-hotspots-fn.csv").readlines()
fill(f"{work}/vtune.csv", lines[0], lines[1:], False)
csv = [l for l in open("tests/fixtures/ncu-h200/raw_page.stdout") if l.startswith('"')]
fill(f"{work}/ncu.csv", csv[0] + csv[1], csv[2:], True)
PY

# `seconds peak_rss_bytes` of a command, its stdout discarded.
measure() {
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || {
    cat "$work/stderr" >&2
    return 1
  }
  read -r seconds kib <"$work/time"
  echo "$seconds $((kib * 1024))"
}

median() {
  for _ in $(seq "$repeats"); do "$@"; done | sort -n -k1,1 | sed -n "$(((repeats + 1) / 2))p"
}

ratio() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{a/b:.2f}' if b>0 else 'inf')" "$1" "$2"; }

vtune_size=$(stat -c %s "$work/vtune.csv")
ncu_size=$(stat -c %s "$work/ncu.csv")
echo "== VTune function report $vtune_size bytes; ncu raw page $ncu_size bytes ($profile build)"
printf '  %-34s %14s %14s\n' "polyprof parse …" "vtune" "ncu"
for mode in table json; do
  flags=()
  [ "$mode" = json ] && flags=(--json)
  read -r t_vtune rss_vtune < <(median measure "$polyprof" parse --profiler vtune "${flags[@]}" "$work/vtune.csv")
  read -r t_ncu rss_ncu < <(median measure "$polyprof" parse --profiler ncu "${flags[@]}" "$work/ncu.csv")
  printf '  %-34s %13sx %13sx\n' "$mode: peak RSS / file size" "$(ratio "$rss_vtune" "$vtune_size")" "$(ratio "$rss_ncu" "$ncu_size")"
  printf '  %-34s %12sMB %12sMB\n' "$mode: peak RSS" "$(ratio "$rss_vtune" 1e6)" "$(ratio "$rss_ncu" 1e6)"
  printf '  %-34s %13ss %13ss\n' "$mode: time" "$t_vtune" "$t_ncu"
done
echo "  target: VTune peak RSS <= 4x the file, as the ncu parser's"
