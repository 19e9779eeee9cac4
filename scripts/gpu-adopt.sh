#!/usr/bin/env bash
# Live check of issue 27's pieces that need an NVIDIA GPU (written for the H200 lane: nvcc, ncu).
#
#   scripts/gpu-adopt.sh POLYPROF OUTDIR
#
# 1. A project file `polyprof.toml` with `clock_control = "none"` and `output_root = "runs"` in
#    OUTDIR/project: `polyprof run --profiler ncu -- app 1` from a subfolder, with no flag, must
#    put its run under OUTDIR/project/runs/ncu.000 and pass `--clock-control none` to ncu (the
#    run document's plan); with `--clock-control base` the flag wins.
# 2. Two real runs of the same program diffed with `--junit` and `--markdown`: the JUnit file has
#    one test case per kernel (4) and the Markdown summary one row per kernel; the exit status
#    says whether run-to-run noise passed the gate.
# Prints OK/FAIL per check; exit 0 when every check held, 1 otherwise, 2 on bad arguments.
set -uo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 POLYPROF OUTDIR" >&2; exit 2; }
polyprof=$(realpath "$1")
out=$(realpath -m "$2")
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out/project/sub"
failed=0
check() { if eval "$2"; then echo "OK    $1"; else echo "FAIL  $1"; failed=1; fi; }
# Whether run document $1 passed `--clock-control $2` to ncu (anywhere in its plan's argv lists).
clock() {
  python3 - "$1" "$2" <<'PY'
import json, sys
def lists(node):
    if isinstance(node, list):
        yield node
        for item in node: yield from lists(item)
    elif isinstance(node, dict):
        for item in node.values(): yield from lists(item)
doc = json.load(open(sys.argv[1]))
found = any(l[i + 1] == sys.argv[2] for l in lists(doc.get("plan")) for i in range(len(l) - 1)
            if l[i] == "--clock-control")
sys.exit(0 if found else 1)
PY
}

nvcc -O3 -arch=sm_90 -lineinfo -o "$out/app" "$here/tests/fixtures/ncu-h200/kernels.cu" || exit 1
printf 'clock_control = "none"\noutput_root = "runs"\n' >"$out/project/polyprof.toml"
rm -rf "$out/project/runs" "$out/base"
(cd "$out/project/sub" && "$polyprof" config && "$polyprof" run -q --profiler ncu -- "$out/app" 1) \
  >"$out/config.log" 2>&1
run="$out/project/runs/ncu.000/run.json"
check "the project file's output root holds the run" "[[ -f $run ]]"
check "ncu got --clock-control none from the project file" "clock $run none"
(cd "$out/project/sub" && "$polyprof" run -q --profiler ncu --clock-control base \
  --output-dir "$out/base" -- "$out/app" 1) >>"$out/config.log" 2>&1
check "the flag overrides the file (--clock-control base)" "clock $out/base/run.json base"

"$polyprof" diff "$run" "$out/base/run.json" --junit "$out/diff.xml" --markdown "$out/diff.md" \
  >"$out/diff.txt" 2>&1
echo "diff exit status: $? (0: no regression, 1: regression; unlocked vs locked clocks)"
check "JUnit: one test case per kernel" "[[ \$(grep -c '<testcase ' $out/diff.xml) == 4 ]]"
check "Markdown: one row per kernel" "[[ \$(grep -c '^| [✅❌⏭⚠]' $out/diff.md) == 4 ]]"
cat "$out/diff.md"
exit $failed
