#!/usr/bin/env bash
# Parse benchmark for the ncu backend: a 10,000-launch raw-page CSV made by replicating real
# H200 fixture rows (IDs renumbered), parsed by polyprof and by pandas.read_csv side by side in
# one run. Prints times, peak memory and the ratios (targets: >= 20x faster than pandas, peak
# memory <= 4x the file size, for the default mode, which fills the normalized records). The
# library is measured with one thread and with two (the default on a machine with >= 2 cores);
# every figure is the median of REPEATS (default 5) separate processes.
# Usage: [REPEATS=N] scripts/bench-ncu-parse.sh [LAUNCHES]
set -euo pipefail
cd "$(dirname "$0")/.."
launches="${1:-10000}"
repeats="${REPEATS:-5}"
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

# Run a measuring command REPEATS times (separate processes, so no run reuses another's warm
# heap) and print the output line with the median first field (seconds).
median() {
  for _ in $(seq "$repeats"); do "$@"; done | sort -n -k1,1 | sed -n "$(((repeats + 1) / 2))p"
}

ratio() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{a/b:.2f}' if b>0 else 'inf')" "$1" "$2"; }

for source in raw_page.stdout raw_page_selected_metrics.stdout; do
  file="$work/${source%%.*}.csv"
  "$bench" gen "tests/fixtures/ncu-h200/$source" "$file" "$launches"
  size=$(stat -c %s "$file")
  columns=$(head -1 "$file" | tr ',' '\n' | grep -c '^"')
  echo "== $launches launches from $source: $size bytes, $columns columns"

  # In-process: `parse_reader_threads` on the file, records kept in memory (as pandas keeps its
  # frame); peak RSS of the whole process. Default mode (MetricFilter::Essential) and every
  # metric, one thread and two.
  read -r t_default1 n_default c_default rss_default1 < <(median "$bench" parse "$file" default 1)
  read -r t_default n_default c_default rss_default < <(median "$bench" parse "$file" default 2)
  read -r t_all1 n_all c_all rss_all1 < <(median "$bench" parse "$file" all 1)
  read -r t_all n_all c_all rss_all < <(median "$bench" parse "$file" all 2)
  # The CLI: table of normalized fields; JSON streamed record by record, default and all metrics.
  read -r t_table rss_table < <(median measure "$polyprof" parse "$file")
  read -r t_json rss_json < <(median measure "$polyprof" parse --json "$file")
  read -r t_json_all rss_json_all < <(median measure "$polyprof" parse --json --all-metrics "$file")
  row() { printf '  %-52s %8ss  peak %6.1f MB (%sx file)\n' "$1" "$2" "$(ratio "$3" 1e6)" "$(ratio "$3" "$size")"; }
  row "library, default, 1 thread ($n_default launches, $c_default cells)" "$t_default1" "$rss_default1"
  row "library, default, 2 threads" "$t_default" "$rss_default"
  row "library, all metrics, 1 thread ($c_all cells)" "$t_all1" "$rss_all1"
  row "library, all metrics, 2 threads" "$t_all" "$rss_all"
  row "polyprof parse (table, process)" "$t_table" "$rss_table"
  row "polyprof parse --json (process)" "$t_json" "$rss_json"
  row "polyprof parse --json --all-metrics (process)" "$t_json_all" "$rss_json_all"

  if [ "$have_pandas" = 1 ]; then
    # read_csv alone (after `import pandas`; its time includes reading the file, as ours does),
    # and the process peak including pandas itself.
    cat >"$work/read_csv_bench.py" <<'PY'
import resource, sys, time
import pandas
start = time.perf_counter()
frame = pandas.read_csv(sys.argv[1], low_memory=False)
elapsed = time.perf_counter() - start
print(f"{elapsed:.4f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}")
PY
    read -r t_pandas rss_pandas < <(median python3 "$work/read_csv_bench.py" "$file")
    row "pandas.read_csv" "$t_pandas" "$rss_pandas"
    echo "  speedup vs pandas.read_csv: library default $(ratio "$t_pandas" "$t_default1")x" \
      "with 1 thread, $(ratio "$t_pandas" "$t_default")x with 2 (target >= 20x)," \
      "library all metrics $(ratio "$t_pandas" "$t_all1")x / $(ratio "$t_pandas" "$t_all")x," \
      "CLI table $(ratio "$t_pandas" "$t_table")x, CLI --json $(ratio "$t_pandas" "$t_json")x," \
      "CLI --json --all-metrics $(ratio "$t_pandas" "$t_json_all")x"
    echo "  peak memory / file: library default $(ratio "$rss_default1" "$size")x with 1 thread," \
      "$(ratio "$rss_default" "$size")x with 2 (target <= 4x)," \
      "library all metrics $(ratio "$rss_all" "$size")x"
  else
    echo "  pandas not available (pip install pandas): no comparison"
  fi
done

# Kernel names: ncu prints manglings (`--print-kernel-base mangled`) that polyprof demangles
# while parsing (a per-thread cache keeps that to once per distinct name). The same 4 PyTorch
# launches (tests/fixtures/ncu-h200-names) with ncu's demangled names and with manglings.
for source in kname-unfiltered.csv kname-mangled.csv; do
  "$bench" gen "tests/fixtures/ncu-h200-names/$source" "$work/$source" "$launches"
done
read -r t_plain _ < <(median "$bench" parse "$work/kname-unfiltered.csv" default 1)
read -r t_mangled _ < <(median "$bench" parse "$work/kname-mangled.csv" default 1)
echo "== $launches launches of PyTorch kernels, library default, 1 thread: ncu's demangled names" \
  "${t_plain}s, manglings demangled by polyprof ${t_mangled}s ($(ratio "$t_mangled" "$t_plain")x)"
