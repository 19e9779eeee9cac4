#!/usr/bin/env bash
# Parse benchmark for the unitrace parsers: a device timeline of LINES lines (default 100,000)
# and a device timing summary of ROWS rows (default 10,000), both made by repeating the real
# pti-gpu fixture rows. Each is read and turned into normalized records by polyprof; the
# summary is also read by pandas.read_csv in the same run (ratio). Prints the median of REPEATS
# (default 5) separate processes: time, peak memory, and ratios.
# Usage: [REPEATS=N] scripts/bench-intel-parse.sh [LINES] [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
lines="${1:-100000}"
rows="${2:-10000}"
repeats="${REPEATS:-5}"
cargo build --quiet --release --example intel_parse_bench
bench=target/release/examples/intel_parse_bench
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

median() {
  for _ in $(seq "$repeats"); do "$@"; done | sort -n -k1,1 | sed -n "$(((repeats + 1) / 2))p"
}
ratio() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{a/b:.2f}' if b>0 else 'inf')" "$1" "$2"; }
mb() { python3 -c "import sys; print(f'{float(sys.argv[1])/1e6:.1f}')" "$1"; }

timeline="$work/timeline.txt"
"$bench" gen-timeline tests/fixtures/unitrace/dpc_gemm_device_timeline.txt "$timeline" "$lines"
size=$(stat -c %s "$timeline")
read -r t_tl n_tl rss_tl p_tl < <(median "$bench" timeline "$timeline")
echo "== device timeline: $lines lines, $size bytes (Level Zero, quoted names with commas)"
echo "  polyprof: ${t_tl}s (${p_tl}s to read and parse, the rest building records), $n_tl kernel records, peak $(mb "$rss_tl") MB ($(ratio "$rss_tl" "$size")x file)"

summary="$work/summary.txt"
skip=$("$bench" gen-summary tests/fixtures/unitrace/dpc_gemm_device_timing.txt "$summary" "$rows")
size=$(stat -c %s "$summary")
read -r t_sum n_sum rss_sum p_sum < <(median "$bench" summary "$summary")
echo "== device timing summary: $rows rows, $size bytes"
echo "  polyprof: ${t_sum}s (${p_sum}s to read and parse, the rest building records), $n_sum kernel records, peak $(mb "$rss_sum") MB ($(ratio "$rss_sum" "$size")x file)"
if python3 -c 'import pandas' 2>/dev/null; then
  cat >"$work/read_csv_bench.py" <<'PY'
import resource, sys, time
import pandas
start = time.perf_counter()
# The same table: padded cells after ", ", quoted names with commas, banner lines skipped.
frame = pandas.read_csv(sys.argv[1], skiprows=int(sys.argv[2]), skipinitialspace=True)
elapsed = time.perf_counter() - start
assert len(frame) == int(sys.argv[3]), len(frame)
print(f"{elapsed:.4f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}")
PY
  read -r t_pd rss_pd < <(median python3 "$work/read_csv_bench.py" "$summary" "$skip" "$rows")
  echo "  pandas.read_csv: ${t_pd}s, process peak $(mb "$rss_pd") MB (pandas itself included)"
  echo "  speedup vs pandas.read_csv: $(ratio "$t_pd" "$t_sum")x; peak memory polyprof/pandas: $(ratio "$rss_sum" "$rss_pd")x"
else
  echo "  pandas not available (pip install pandas): no comparison"
fi
