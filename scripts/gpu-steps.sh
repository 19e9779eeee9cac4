# Helpers the GPU lane scripts source (gpu-verdicts.sh, gpu-preset-cost.sh). The caller sets
# `out` (the output folder) and `summary` (its summary file) first.

say() { echo "$*" | tee -a "$summary"; }

# step NAME LIMIT CMD...: run CMD with a timeout, keep its output in NAME.out/.err, its exit
# status in NAME.rc and its wall time in NAME.wall; never stops the script (returns CMD's status).
step() {
  local name="$1" limit="$2"; shift 2
  echo "+ $*" >"$out/$name.cmd"
  local start end
  start=$(date +%s.%N)
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  end=$(date +%s.%N)
  echo "$rc" >"$out/$name.rc"
  python3 -c "print(f'{$end - $start:.2f}')" >"$out/$name.wall"
  return $rc
}

# The wall time of step NAME, seconds (nan when it did not run).
wall() { cat "$out/$1.wall" 2>/dev/null || echo nan; }

# Replay passes per launch (`profiler__replayer_passes`) and the SM clock of a raw-page CSV.
passes_of() {
  python3 - "$1" <<'PY'
import csv, statistics, sys
lines = [l for l in open(sys.argv[1], errors="replace") if l.startswith('"')]
rows = list(csv.reader(lines))
if len(rows) < 3:
    print("   no CSV rows"); sys.exit(0)
col = {h: i for i, h in enumerate(rows[0])}
def num(r, name):
    try: return float(r[col[name]].replace(",", ""))
    except (KeyError, ValueError): return None
passes = [num(r, "profiler__replayer_passes") for r in rows[2:]]
clocks = [num(r, "sm__cycles_elapsed.avg.per_second") for r in rows[2:]]
passes = [p for p in passes if p is not None]
clocks = [c for c in clocks if c is not None]
print(f"   launches {len(rows) - 2}, replay passes per launch: min {min(passes, default=0):.0f} "
      f"median {statistics.median(passes) if passes else 0:.0f} max {max(passes, default=0):.0f}"
      + (f"; SM clock median {statistics.median(clocks) / 1e9:.3f} GHz" if clocks else ""))
PY
}
