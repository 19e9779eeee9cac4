#!/usr/bin/env bash
# Live check of `polyprof batch` on a GPU host (written for the H200 lane).
#
#   scripts/gpu-batch.sh POLYPROF_BINARY [OUTPUT_DIR]
#
# Needs ncu, nvcc, nvidia-smi and python3 with PyTorch + pytest; run from the repository root.
# A job file of ncu jobs (the CUDA program, the PyTorch pytest, a program that exits 3, one that
# hangs past its timeout) plus a `none` job that prints its pinning goes through the pool the
# host's `nvidia-smi -L` gives; then the same root is resumed (nothing reruns). summary.txt is
# the short report; batch.json the index.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 POLYPROF_BINARY [OUTPUT_DIR]" >&2; exit 2; }
polyprof="$(realpath "$1")"
out="$(realpath -m "${2:-./gpu-batch-out}")"
fixtures="$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/ncu-h200"
mkdir -p "$out/bin"
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
nvcc -O3 -arch=sm_90 -o "$out/bin/app" "$fixtures/kernels.cu" || say "FAIL: nvcc"
ncu='"ncu": {"clock_control": "none"}'
cat >"$out/jobs.jsonl" <<JOBS
{"id": "cuda-app", "target": ["$out/bin/app", "1"], "profiler": "ncu", $ncu, "labels": {"kind": "cuda"}}
{"id": "torch-pytest", "target": ["python3", "-m", "pytest", "-q", "$fixtures/test_torch_ops.py"], "language": "pytorch", "arch": "H200", $ncu, "end_marker": "pytest"}
{"id": "exits-3", "target": ["sh", "-c", "$out/bin/app 1 >/dev/null; exit 3"], "profiler": "ncu", $ncu}
{"id": "hangs", "target": ["python3", "-c", "import time; time.sleep(600)"], "profiler": "ncu", $ncu, "timeout_s": 5}
{"id": "pinning", "target": ["sh", "-c", "echo cuda=\$CUDA_VISIBLE_DEVICES"], "profiler": "none"}
JOBS
say "== devices"; nvidia-smi -L | tee -a "$summary"
start=$(date +%s.%N)
"$polyprof" batch "$out/jobs.jsonl" --output-dir "$out/b" --json >"$out/batch.json" 2>"$out/batch.err"
rc=$?
end=$(date +%s.%N)
say "== batch rc=$rc in $(python3 -c "print(f'{$end - $start:.1f}')") s"
python3 - "$out/batch.json" "$out/b" <<'PY' | tee -a "$summary"
import json, sys, os
index = json.load(open(sys.argv[1]))
for job_id, e in sorted(index["jobs"].items(), key=lambda kv: kv[1].get("order", 0)):
    print(f"{job_id:14} {e['state']:10} device={e.get('device')} exit={e.get('exit_code')} "
          f"kernels={e.get('kernels')} total_kernel_ns={e.get('total_kernel_ns')} top={e.get('top_kernel')}")
print("devices:", [(d["name"], d.get("quarantined")) for d in index.get("devices", [])])
run_dir = os.path.join(sys.argv[2], index["jobs"]["pinning"]["run_dir"])
run = json.load(open(os.path.join(run_dir, "run.json")))
print("pinning job printed:", run["steps"][0]["attempts"][0]["stdout"]["head"])
PY
tail -5 "$out/batch.err" | sed 's/^/   /' | tee -a "$summary"
say "== report of cuda-app"
"$polyprof" report "$out/b/runs/cuda-app" 2>&1 | head -20 | tee -a "$summary"
say "== resume (nothing should rerun)"
start=$(date +%s.%N)
"$polyprof" batch "$out/jobs.jsonl" --output-dir "$out/b" --resume -q >"$out/resume.out" 2>&1
say "resume rc=$? in $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s"
tail -12 "$out/resume.out" | tee -a "$summary"
