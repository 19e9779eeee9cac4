#!/usr/bin/env bash
# Live check of the HTML and SVG reports on an NVIDIA GPU (written for the H200 lane: nvcc, ncu;
# chromium optional). What the bundled captures cannot show: fresh runs with the SM and DRAM
# clocks they had, two real runs of one program side by side, and a run of many launches.
#
#   scripts/gpu-html.sh POLYPROF OUTDIR
#
# 1. Builds tests/fixtures/ncu-h200/kernels.cu (four kernels per repetition) into OUTDIR/app.
# 2. Two runs of `app 1` under ncu with unlocked clocks (OUTDIR/a, OUTDIR/b), each reported as
#    html and svg, then `diff a b --format html`. Checks: every kernel name has a roofline point
#    (none "Not placed"), the page states the SM clock the run had, the diff page has 8 points.
# 3. One run of `app $REPS` (default 250: 1,000 launches) with `--preset minimal`, reported as
#    html: size and how long `report` took.
# 4. With chromium on PATH: each page loaded headless, its script's readiness, recorded errors
#    and render time (data-render-ms) read back, and a screenshot saved beside it.
# Prints one line per page (size, points, render ms) and OK/FAIL per check; exit 0 when every
# check held, 1 otherwise, 2 on bad arguments.
set -uo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 POLYPROF OUTDIR" >&2; exit 2; }
polyprof=$(realpath "$1")
out=$(realpath -m "$2")
here="$(cd "$(dirname "$0")/.." && pwd)"
reps="${REPS:-250}"
mkdir -p "$out"
failed=0
check() { if eval "$2"; then echo "OK    $1"; else echo "FAIL  $1"; failed=1; fi; }

nvcc -O3 -arch=sm_90 -lineinfo -o "$out/app" "$here/tests/fixtures/ncu-h200/kernels.cu" || exit 1
for side in a b; do
  rm -rf "$out/$side"
  "$polyprof" run -q --profiler ncu --clock-control none --output-dir "$out/$side" -- "$out/app" 1 \
    >"$out/$side.log" 2>&1
  "$polyprof" report "$out/$side" --format html -o "$out/$side.html" 2>>"$out/$side.log"
  "$polyprof" report "$out/$side" --format svg -o "$out/$side.svg" 2>>"$out/$side.log"
done
"$polyprof" diff "$out/a" "$out/b" --format html -o "$out/diff.html" 2>>"$out/b.log"
echo "diff exit status: $? (0: no regression, 1: regression)"

t0=$(date +%s%N)
rm -rf "$out/many"
timeout 400 "$polyprof" run -q --profiler ncu --preset minimal --clock-control none \
  --output-dir "$out/many" -- "$out/app" "$reps" >"$out/many.log" 2>&1
t1=$(date +%s%N)
"$polyprof" report "$out/many" --format html -o "$out/many.html" 2>>"$out/many.log"
t2=$(date +%s%N)
echo "many: profiled in $(( (t1 - t0) / 1000000 )) ms, reported in $(( (t2 - t1) / 1000000 )) ms"

points() { grep -o '<circle class="point"' "$1" | wc -l; }
for side in a b; do
  check "$side: 4 roofline points" "[[ \$(points $out/$side.html) == 4 ]]"
  check "$side: no kernel left unplaced" "! grep -q 'Not placed' $out/$side.html"
  check "$side: roofs at the SM clock the run had" "grep -q 'SM clock the run had' $out/$side.html"
  check "$side: the svg has 4 points" "[[ \$(points $out/$side.svg) == 4 ]]"
done
check "diff: 8 points (A and B)" "[[ \$(points $out/diff.html) == 8 ]]"
check "many: the page is under 5 MB" "[[ \$(stat -c %s $out/many.html) -lt 5000000 ]]"

chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
for page in a.html b.html diff.html many.html; do
  size=$(stat -c %s "$out/$page" 2>/dev/null || echo 0)
  render="-"
  if [[ -n "$chromium" ]]; then
    dom=$("$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$out/chrome" \
      --dump-dom "file://$out/$page" 2>/dev/null)
    render=$(grep -o 'data-render-ms="[0-9.]*"' <<<"$dom" | grep -o '[0-9.]*' || echo "-")
    check "$page: script finished without errors" \
      "grep -q 'data-ready=\"1\"' <<<\"\$dom\" && grep -q 'data-count=\"0\"' <<<\"\$dom\""
    "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1400 \
      --user-data-dir="$out/chrome" --screenshot="$out/${page%.html}.png" "file://$out/$page" \
      >/dev/null 2>&1
  fi
  printf '%-10s %9s bytes  %s points  render %s ms\n' "$page" "$size" "$(points "$out/$page")" "$render"
done
[[ -n "$chromium" ]] || echo "(no chromium here: pages not loaded; copy OUTDIR and run scripts/bench-html.sh-style loads elsewhere)"
exit "$failed"
