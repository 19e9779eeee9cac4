#!/usr/bin/env bash
# Parse benchmark for the ncu backend: a 10,000-launch raw-page CSV made by replicating real
# H200 fixture rows (IDs renumbered), parsed by polyprof and by pandas.read_csv side by side in
# one run. Prints times, peak memory and the ratios (targets: >= 20x faster than pandas, peak
# memory <= 4x the file size). Usage: scripts/bench-ncu-parse.sh [LAUNCHES]
set -euo pipefail
cd "$(dirname "$0")/.."
launches="${1:-10000}"
cargo build --quiet --release --bin polyprof --example ncu_parse_bench
bench=target/release/examples/ncu_parse_bench
polyprof=target/release/polyprof
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

have_pandas=0
if python3 -c 'import pandas' 2>/dev/null; then have_pandas=1; fi

# `seconds peak_rss_bytes` of a command, its stdout discarded.
measure() {
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null
  read -r seconds kib <"$work/time"
  echo "$seconds $((kib * 1024))"
}

ratio() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{a/b:.2f}' if b>0 else 'inf')" "$1" "$2"; }

for source in raw_page.stdout raw_page_selected_metrics.stdout; do
  file="$work/${source%%.*}.csv"
  "$bench" gen "tests/fixtures/ncu-h200/$source" "$file" "$launches"
  size=$(stat -c %s "$file")
  columns=$(head -1 "$file" | tr ',' '\n' | grep -c '^"')
  echo "== $launches launches from $source: $size bytes, $columns columns"

  # In-process parse times (file read included), peak RSS of the whole process.
  read -r t_all n_all rss_all < <("$bench" parse "$file")
  read -r t_fields n_fields rss_fields < <("$bench" parse "$file" gpu__time_duration.sum)
  # The CLI: table of normalized fields; JSON of every metric streamed record by record.
  read -r t_table rss_table < <(measure "$polyprof" parse "$file")
  read -r t_json rss_json < <(measure "$polyprof" parse --json "$file")
  printf '  %-44s %8ss  peak %6.1f MB (%sx file)\n' \
    "library, all metrics in memory ($n_all)" "$t_all" "$(ratio "$rss_all" 1e6)" "$(ratio "$rss_all" "$size")" \
    "library, record fields only ($n_fields)" "$t_fields" "$(ratio "$rss_fields" 1e6)" "$(ratio "$rss_fields" "$size")" \
    "polyprof parse (table, process)" "$t_table" "$(ratio "$rss_table" 1e6)" "$(ratio "$rss_table" "$size")" \
    "polyprof parse --json (all metrics, process)" "$t_json" "$(ratio "$rss_json" 1e6)" "$(ratio "$rss_json" "$size")"

  if [ "$have_pandas" = 1 ]; then
    # read_csv alone (after `import pandas`), and the process peak including pandas itself.
    read -r t_pandas rss_pandas < <(python3 - "$file" <<'PY'
import resource, sys, time
import pandas
start = time.perf_counter()
frame = pandas.read_csv(sys.argv[1], low_memory=False)
elapsed = time.perf_counter() - start
print(f"{elapsed:.4f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}")
PY
)
    printf '  %-44s %8ss  peak %6.1f MB (%sx file)\n' "pandas.read_csv" "$t_pandas" \
      "$(ratio "$rss_pandas" 1e6)" "$(ratio "$rss_pandas" "$size")"
    echo "  speedup vs pandas.read_csv: library fields-only $(ratio "$t_pandas" "$t_fields")x," \
      "library all metrics $(ratio "$t_pandas" "$t_all")x, CLI table $(ratio "$t_pandas" "$t_table")x," \
      "CLI --json $(ratio "$t_pandas" "$t_json")x (target >= 20x)"
  else
    echo "  pandas not available (pip install pandas): no comparison"
  fi
done
