#!/usr/bin/env bash
# The cascade's saving, side by side in one run: one problem, N generated candidates (a third
# incorrect, a third far slower, a third honest), stages check -> time -> profile with the
# profile margin MARGIN, run
#   1. as a cascade (`polyprof batch`): a stage runs only after the one before passed, the
#      profile stage only within the margin of the best time;
#   2. without it (`polyprof batch --all-stages`): every stage for every candidate;
# and for each: the wall time, the jobs that ran and were skipped, the device seconds (the sum
# of the entries' durations); then the cascade's own estimate of what it saved (a job skipped
# after a failed stage: what that failure took; after the profile rule: its stage's mean time)
# beside the measured difference.
#
# Environment:
#   DEVICE  cpu (default: the numpy problem of tests/programs/eval, CPU slots, no witness) or
#           cuda (the fp32 4096² matmul of tests/eval/gpu/matmul.py, torch, the ncu witness and
#           the work pass in the profile stage: the H200 figure, scripts/gpu-cascade.sh)
#   N       candidates (default 12), MARGIN (default 0.5), JOBS (CPU slots, default 2)
#   BIN     polyprof binary (default target/release/polyprof, built if missing)
#   PYTHON  the workers' interpreter (default python3; needs numpy, or torch for cuda)
#   KEEP    a folder to copy both batch roots into (cascade/, all/) before the work dir goes
set -euo pipefail
cd "$(dirname "$0")/.."

DEVICE=${DEVICE:-cpu}
N=${N:-12}
MARGIN=${MARGIN:-0.5}
JOBS=${JOBS:-2}
PYTHON=${PYTHON:-python3}
if [[ -z "${BIN:-}" ]]; then
  echo "building release binary..."
  cargo build --release --quiet
  BIN=$PWD/target/release/polyprof
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/polyprof-bench-cascade.XXXXXX")
keep() {
  if [[ -n "${KEEP:-}" ]]; then
    mkdir -p "$KEEP" && cp -r "$WORK/jobs.jsonl" "$WORK/c" "$KEEP/" 2>/dev/null || true
    for root in cascade all; do [[ -d "$WORK/$root" ]] && cp -r "$WORK/$root" "$KEEP/"; done
  fi
  rm -rf "$WORK"
}
trap keep EXIT
mkdir -p "$WORK/c"

case "$DEVICE" in
  cpu)
    REFERENCE=$PWD/tests/programs/eval/reference.py
    EVAL='{"device": "cpu", "witness_profiler": "none", "trials": 2, "timing_blocks": 3, "repeat": 5}'
    DEVICES=(--devices cpu --jobs "$JOBS")
    ;;
  cuda)
    REFERENCE=$PWD/tests/eval/gpu/matmul.py
    EVAL='{"device": "cuda", "witness_profiler": "ncu", "work_pass": true, "trials": 2, "timing_blocks": 3, "repeat": 10}'
    DEVICES=()
    ;;
  *) echo "DEVICE must be cpu or cuda" >&2; exit 2 ;;
esac

# Candidates: the reference as ModelNew (honest), with a wrong result, or far slower.
"$PYTHON" - "$REFERENCE" "$WORK/c" "$N" "$DEVICE" <<'EOF'
import sys
reference, out, n, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
source = open(reference).read()
for i in range(n):
    kind = ("honest", "wrong", "slow")[i % 3]
    if device == "cpu":
        text = source.replace("class Model:", "class ModelNew:")
        if kind == "wrong":
            text = text.replace("* self.scale)", "* self.scale * 2)")
        elif kind == "slow":
            text = text.replace("import numpy as np", "import time\nimport numpy as np").replace(
                "        return (np.tanh", "        time.sleep(0.002)\n        return (np.tanh")
    else:
        if kind == "honest":
            text = source + "\n\nModelNew = Model\n"
        elif kind == "wrong":
            text = source + ("\n\nclass ModelNew(Model):\n    def forward(self, A, B):\n"
                             "        return torch.matmul(A, B) + 1\n")
        else:
            # Real GPU work, eight times over: far outside any sensible margin.
            text = source + ("\n\nclass ModelNew(Model):\n    def forward(self, A, B):\n"
                             "        for _ in range(7):\n            torch.matmul(A, B)\n"
                             "        return torch.matmul(A, B)\n")
    open(f"{out}/{kind}{i:03d}.py", "w").write(text)
EOF

"$PYTHON" - "$WORK" "$REFERENCE" "$MARGIN" "$EVAL" "$PYTHON" <<'EOF'
import json, os, sys
work, reference, margin, table, python = sys.argv[1:6]
table = json.loads(table)
table["python"] = python
cands = sorted(os.path.join(work, "c", f) for f in os.listdir(os.path.join(work, "c")))
problem = {"id": "p", "reference": reference, "candidates": cands,
           "stages": ["check", "time", "profile"], "profile": {"margin": float(margin)},
           "eval": table, "timeout_s": 300}
open(os.path.join(work, "jobs.jsonl"), "w").write(json.dumps({"problem": problem}) + "\n")
EOF

now_ns() { date +%s%N; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }

run() { # name, extra args...
  local name=$1; shift
  local t0; t0=$(now_ns)
  "$BIN" batch "$WORK/jobs.jsonl" --output-dir "$WORK/$name" -q "${DEVICES[@]}" "$@" > /dev/null || true
  echo "$(ms_since "$t0")"
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg), cores: $(nproc), device: $DEVICE, candidates: $N (a third each honest, wrong, slow), margin: $MARGIN"
cascade_ms=$(run cascade)
all_ms=$(run all --all-stages)

"$PYTHON" - "$WORK" "$cascade_ms" "$all_ms" <<'EOF'
import json, sys
work, cascade_ms, all_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def read(name):
    return json.load(open(f"{work}/{name}/batch.json"))
rows = []
for name, ms in (("cascade", cascade_ms), ("all stages", all_ms)):
    index = read("cascade" if name == "cascade" else "all")
    s = index["cascade"]
    ran = sum(st["ran"] for st in s["stages"])
    skipped = sum(st["skipped"] for st in s["stages"])
    device_s = sum(st["device_s"] for st in s["stages"])
    per = "  ".join(f'{st["stage"]} {st["ran"]}/{st["passed"]}/{st["skipped"]}' for st in s["stages"])
    rows.append((name, ms / 1000, ran, skipped, device_s, per, s["saved_device_s"]))
print(f'{"":12} {"wall s":>8} {"ran":>5} {"skipped":>8} {"device s":>9}   per stage (ran/passed/skipped)')
for name, wall, ran, skipped, device_s, per, _ in rows:
    print(f"{name:12} {wall:8.1f} {ran:5d} {skipped:8d} {device_s:9.1f}   {per}")
(_, cw, _, _, cd, _, estimate), (_, aw, _, _, ad, _, _) = rows
print(f"wall time: the cascade took {cw / aw:.2f}x of all stages ({aw - cw:.1f} s less)")
print(f"device seconds saved: measured {ad - cd:.1f} s (all stages minus the cascade); "
      f"the cascade's own estimate {estimate:.1f} s (a skip after a failed stage: what the failure took; after the profile rule: the stage mean)")
EOF
