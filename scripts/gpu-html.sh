#!/usr/bin/env bash
# Live check of the HTML and SVG reports on an NVIDIA GPU (written for the H200 lane: nvcc, ncu;
# PyTorch for step 3; chromium optional). What the bundled captures cannot show: fresh runs with
# the SM and DRAM clocks they had, two real runs of one program side by side, a tensor run with
# several precisions, and a run of many launches.
#
#   scripts/gpu-html.sh POLYPROF [OUTDIR]
#
# POLYPROF: a polyprof built for x86-64 Linux elsewhere (no Rust toolchain needed here).
# OUTDIR: default $OUT, else ./gpu-html-out. One device call: every step has its own timeout
# and the whole script stays under about 6 minutes on an H200.
#
# 1. Builds tests/fixtures/ncu-h200/kernels.cu (four FP32 kernels per repetition) into OUTDIR/app.
# 2. Two runs of `app 1` under ncu with unlocked clocks (OUTDIR/a, OUTDIR/b), each reported as
#    html and svg, then `diff a b --format html`. Checks: one FP32 chart with every kernel as a
#    point (none "Not placed"), the chart states the SM clock the run had, the diff page has 8.
# 3. With PyTorch: tests/fixtures/ncu-h200-fp8/fp8.py (an FP8 cuBLAS matmul) under ncu. Checks:
#    a tensor_fp8 chart and an fp32 chart (the matmul's epilogue), the matmul a point in both.
# 4. One run of `app $REPS` (default 100: 400 launches) with `--preset minimal`, reported as
#    html: size and how long `report` took.
# 5. With chromium on PATH: each page loaded headless, its script's readiness, recorded errors
#    and render time (data-render-ms) read back, and a screenshot saved beside it. Without it,
#    load OUTDIR's pages elsewhere (scripts/bench-html.sh does the same loads).
# Prints one line per page (size, charts, points, render ms) and OK/FAIL/SKIP per check, also
# into OUTDIR/summary.txt; exit 0 when every check held, 1 otherwise, 2 on bad arguments.
set -uo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 POLYPROF [OUTDIR]" >&2; exit 2; }
polyprof=$(realpath "$1")
out=$(realpath -m "${2:-${OUT:-gpu-html-out}}")
here="$(cd "$(dirname "$0")/.." && pwd)"
reps="${REPS:-100}"
mkdir -p "$out"
exec > >(tee "$out/summary.txt") 2>&1
failed=0
check() { if eval "$2"; then echo "OK    $1"; else echo "FAIL  $1"; failed=1; fi; }
points() { grep -o '<circle class="point"' "$1" 2>/dev/null | wc -l; }
charts() { grep -o 'class="roofline-chart"[^>]*data-precision="[a-z0-9_]*"' "$1" 2>/dev/null \
  | grep -o 'precision="[a-z0-9_]*"' | cut -d'"' -f2 | tr '\n' ' '; }
profile() {  # profile NAME TIMEOUT ARGS... -- CMD...: a run under ncu, its html and svg
  local name=$1 limit=$2; shift 2
  rm -rf "${out:?}/$name"
  timeout "$limit" "$polyprof" run -q --profiler ncu --clock-control none --output-dir "$out/$name" \
    "$@" >"$out/$name.log" 2>&1
  echo "$name: run exit status $?"
  "$polyprof" report "$out/$name" --format html -o "$out/$name.html" 2>>"$out/$name.log"
  "$polyprof" report "$out/$name" --format svg -o "$out/$name.svg" 2>>"$out/$name.log"
}

echo "$(date -u +%FT%TZ) $("$polyprof" --version 2>&1) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
timeout 120 nvcc -O3 -arch=sm_90 -lineinfo -o "$out/app" "$here/tests/fixtures/ncu-h200/kernels.cu" \
  || { echo "FAIL  nvcc"; exit 1; }
for side in a b; do profile "$side" 120 -- "$out/app" 1; done
"$polyprof" diff "$out/a" "$out/b" --format html -o "$out/diff.html" 2>>"$out/b.log"
echo "diff exit status: $? (0: no regression, 1: regression)"
for side in a b; do
  check "$side: one chart, fp32" "[[ \"\$(charts $out/$side.html)\" == 'fp32 ' ]]"
  check "$side: 4 roofline points" "[[ \$(points $out/$side.html) == 4 ]]"
  check "$side: no kernel left unplaced" "! grep -q 'Not placed' $out/$side.html"
  check "$side: roof at the SM clock the run had" "grep -q 'SM clock the run had' $out/$side.html"
  check "$side: the svg has 4 points" "[[ \$(points $out/$side.svg) == 4 ]]"
done
check "diff: 8 points (A and B)" "[[ \$(points $out/diff.html) == 8 ]]"

pages="a.html b.html diff.html"
if python3 -c 'import torch' 2>/dev/null; then
  profile fp8 180 -- python3 "$here/tests/fixtures/ncu-h200-fp8/fp8.py"
  check "fp8: a tensor_fp8 chart" "grep -q 'data-precision=\"tensor_fp8\"' $out/fp8.html"
  check "fp8: an fp32 chart" "[[ \"\$(charts $out/fp8.html)\" == *'fp32 '* ]]"
  check "fp8: the matmul in both" \
    "[[ \$(grep -o '<circle class=\"point\"[^>]*data-short=\"nvjet[^\"]*\"' $out/fp8.html | wc -l) == 2 ]]"
  pages="$pages fp8.html"
else
  echo "SKIP  fp8: no PyTorch here"
fi

t0=$(date +%s%N)
rm -rf "$out/many"
timeout 240 "$polyprof" run -q --profiler ncu --preset minimal --clock-control none \
  --output-dir "$out/many" -- "$out/app" "$reps" >"$out/many.log" 2>&1
t1=$(date +%s%N)
"$polyprof" report "$out/many" --format html -o "$out/many.html" 2>>"$out/many.log"
t2=$(date +%s%N)
echo "many: profiled in $(( (t1 - t0) / 1000000 )) ms, reported in $(( (t2 - t1) / 1000000 )) ms"
check "many: the page is under 5 MB" "[[ \$(stat -c %s $out/many.html) -lt 5000000 ]]"
pages="$pages many.html"

chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
for page in $pages; do
  size=$(stat -c %s "$out/$page" 2>/dev/null || echo 0)
  render="-"
  if [[ -n "$chromium" ]]; then
    dom=$(timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$out/chrome" \
      --dump-dom "file://$out/$page" 2>/dev/null)
    render=$(grep -o 'data-render-ms="[0-9.]*"' <<<"$dom" | grep -o '[0-9.]*' || echo "-")
    check "$page: script finished without errors" \
      "grep -q 'data-ready=\"1\"' <<<\"\$dom\" && grep -q 'data-count=\"0\"' <<<\"\$dom\""
    timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
      --window-size=1200,1400 --user-data-dir="$out/chrome" --screenshot="$out/${page%.html}.png" \
      "file://$out/$page" >/dev/null 2>&1
  fi
  printf '%-10s %9s bytes  charts: %-28s %s points  render %s ms\n' "$page" "$size" \
    "$(charts "$out/$page")" "$(points "$out/$page")" "$render"
done
[[ -n "$chromium" ]] || echo "SKIP  browser loads: no chromium here (open OUTDIR's pages elsewhere)"
rm -rf "$out/chrome" "$out/app"
exit "$failed"
