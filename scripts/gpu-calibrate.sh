#!/usr/bin/env bash
# Live check of `polyprof calibrate` on an NVIDIA GPU (written for the H200 lane), and the
# capture for tests/fixtures/calibrate-h200/.
#
#   scripts/gpu-calibrate.sh POLYPROF_BINARY [OUTPUT_DIR]
#
# Needs on the GPU machine: ncu, nvcc, nvidia-smi, python3; cuobjdump for the SASS counts
# (skipped, and said so, when missing). No Rust toolchain: POLYPROF_BINARY is a polyprof built
# for x86-64 Linux elsewhere. Everything lands under OUTPUT_DIR (default $OUT, else
# ./gpu-calibrate-out): summary.txt is the short report, checks.txt one PASS/FAIL/SKIP line per
# check, and calibrate-h200/ the fixture folder to commit as tests/fixtures/calibrate-h200/
# (this machine's paths rewritten: the cache folder is `CACHE`).
#
# What it does and checks:
#  1. `polyprof calibrate --force --json --cache-dir OUT/cache`: a calibration is made (exit 0,
#     or 1 when a counter is untrusted), every planned kernel recorded;
#  2. the same without --force: served from the cache (`from_cache`), the same document;
#  3. the issue's bar: DRAM bytes read and written by the copy, FP32, FP16, BF16 and FP8 FLOPs
#     within 2 % of the known work (one line each, with the error), and no known work faster
#     than the device table's clock-scaled peak;
#  4. the launch floor is measured;
#  5. diagnostics for reading the result: the program's `info`, the SASS instruction counts of
#     each kernel (FFMA, DFMA, HFMA2, HFMA2.MMA, HMMA, QGMMA, ...) and the raw FP16 counters of
#     the FP16 kernels (SASS hfma thread instructions, HFMA2.MMA warp instructions), so an FP16
#     reading off by a factor can be traced to how the counter counts packed and tensor-pipe
#     FP16 instructions.
# Fits in one 10-minute command (each step has its own timeout).
set -uo pipefail
shopt -s nullglob

if [ $# -lt 1 ]; then
  echo "usage: $0 POLYPROF_BINARY [OUTPUT_DIR]" >&2
  exit 2
fi
polyprof="$(realpath "$1")"
out="$(realpath -m "${2:-${OUT:-./gpu-calibrate-out}}")"
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
summary="$out/summary.txt"
checks="$out/checks.txt"
: >"$summary"
: >"$checks"
cache="$out/cache"

# shellcheck source=scripts/gpu-steps.sh
source "$root/scripts/gpu-steps.sh"
check() { # check NAME PASS|FAIL|SKIP DETAIL
  echo "$2 $1: $3" | tee -a "$checks" | tee -a "$summary"
  return 0
}

say "== environment"
{ nvidia-smi -L; nvidia-smi --query-gpu=index,name,uuid,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  ncu --version | tail -1; nvcc --version | tail -1; "$polyprof" --version; } 2>&1 | tee -a "$summary"

say "== 1. calibrate --force"
rm -rf "$cache"
step calibrate 540 "$polyprof" calibrate --force --json --cache-dir "$cache"
rc=$(cat "$out/calibrate.rc")
say "   exit $rc in $(wall calibrate) s"
sed 's/^/   stderr: /' "$out/calibrate.err" | tee -a "$summary"
if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then
  check calibration_made PASS "exit $rc (0: every counter trusted, 1: one untrusted)"
else
  check calibration_made FAIL "exit $rc: $(head -c 2000 "$out/calibrate.err")"
fi
report="$out/calibrate.out"
work="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("work_dir",""))' "$report" 2>/dev/null)"
cached_doc="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["calibration"]["path"])' "$report" 2>/dev/null)"
say "   work directory: ${work:-none}; cached document: ${cached_doc:-none}"

say "== 2. calibrate again: from the cache"
step cached 120 "$polyprof" calibrate --json --cache-dir "$cache"
step cached_table 120 "$polyprof" calibrate --cache-dir "$cache"
cat "$out/cached_table.out" | tee -a "$summary"
python3 - "$report" "$out/cached.out" 2>/dev/null <<'PY' && check served_from_cache PASS "the second run measured nothing and gave the same calibration" || check served_from_cache FAIL "see cached.out"
import json, sys
first, second = (json.load(open(p)) for p in sys.argv[1:])
assert second["from_cache"] is True, second["from_cache"]
assert first["calibration"] == second["calibration"], "the cached document differs"
PY

say "== 3. the counters against the known work (the issue's bar: within 2 %)"
[ -n "$cached_doc" ] && python3 - "$report" "$checks" <<'PY' | tee -a "$summary"
import json, sys
report = json.load(open(sys.argv[1]))
checks = report["calibration"]["checks"]
lines = []
def line(name, verdict, detail):
    lines.append(f"{verdict} {name}: {detail}")
for quantity in ["dram_bytes_read", "dram_bytes_write", "fp32_flops", "fp16_flops",
                 "tensor_bf16_flops", "tensor_fp8_flops", "fp64_flops", "tensor_fp16_flops",
                 "tensor_tf32_flops"]:
    mine = [c for c in checks if c["quantity"] == quantity]
    required = quantity in {"dram_bytes_read", "dram_bytes_write", "fp32_flops", "fp16_flops",
                            "tensor_bf16_flops", "tensor_fp8_flops"}
    if not mine:
        line(f"within_2pct_{quantity}", "FAIL" if required else "SKIP", "not checked")
        continue
    parts, worst = [], 0.0
    for c in mine:
        if c.get("measured") is None:
            parts.append(f"{c['kernel']} not read"); worst = float("inf"); continue
        err = (c["measured"] - c["expected"]) / c["expected"]
        worst = max(worst, abs(err))
        share = c.get("share_of_peak")
        parts.append(f"{c['kernel']} {err * 100:+.2f} %"
                     + (f" ({share * 100:.1f} % of peak)" if share is not None else ""))
    verdict = "PASS" if worst <= 0.02 else ("FAIL" if required else "INFO")
    line(f"within_2pct_{quantity}", verdict, "; ".join(parts))
above = [c for c in checks if (c.get("share_of_peak") or 0) > 1.0]
line("below_the_peak", "FAIL" if above else "PASS",
     ", ".join(f"{c['kernel']} {c['share_of_peak'] * 100:.1f} %" for c in above) or "every kernel")
floor = report["calibration"].get("launch_floor_ns")
line("launch_floor", "PASS" if floor else "FAIL", f"{floor} ns")
line("every_kernel_recorded", "FAIL" if report.get("missing") else "PASS",
     ", ".join(report.get("missing", [])) or "all")
print("\n".join(lines))
with open(sys.argv[2], "a") as f:
    f.write("\n".join(lines) + "\n")
PY

say "== 4. diagnostics"
fixture="$out/calibrate-h200"
rm -rf "$fixture"
mkdir -p "$fixture"
if [ -n "$work" ] && [ -d "$work" ]; then
  program="$work/calibrate"
  uuid="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["calibration"].get("device_uuid",""))' "$report")"
  CUDA_VISIBLE_DEVICES="$uuid" "$program" info >"$fixture/info.txt" 2>&1
  sed 's/^/   /' "$fixture/info.txt" | tee -a "$summary"
  if command -v cuobjdump >/dev/null; then
    cuobjdump -sass "$program" >"$out/sass.txt" 2>&1
    python3 - "$out/sass.txt" <<'PY' | tee "$fixture/sass_counts.txt" | tee -a "$summary"
import collections, re, sys
text = open(sys.argv[1]).read()
for part in re.split(r"\n\s+Function : ", text)[1:]:
    name = part.split("\n")[0].strip()
    ops = collections.Counter(m.group(2) for m in re.finditer(
        r"/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)", part))
    keep = {k: v for k, v in ops.items()
            if re.match(r"(FFMA|DFMA|HFMA|HMMA|QMMA|QGMMA|HGMMA|FADD|FMUL|DADD|DMUL|HADD|HMUL|F2FP)", k)}
    print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(keep.items())) + " (static count)")
PY
  else
    check sass_counts SKIP "cuobjdump is not on PATH"
  fi
  python3 - "$work/counters/ncu.log" <<'PY' | tee "$fixture/fp16_counters.txt" | tee -a "$summary"
import csv, sys
lines = [l for l in open(sys.argv[1], errors="replace") if l.startswith('"')]
rows = list(csv.reader(lines))
if len(rows) < 3:
    print("no CSV rows in the counters run's ncu.log"); sys.exit(0)
col = {h: i for i, h in enumerate(rows[0])}
names = ["smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
         "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
         "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
         "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",
         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]
for r in rows[2:]:
    kernel = r[col["Kernel Name"]] if "Kernel Name" in col else "?"
    if "fp16" not in kernel:
        continue
    print(kernel + ": " + ", ".join(f"{n} = {r[col[n]]}" for n in names if n in col))
PY
  # The fixture: the plan, the source that ran, both ncu runs (CSV in ncu.log, the program's
  # output in the step logs, run.json), the cached calibration and the command's outputs.
  cp "$work/plan.json" "$work/kernels.cu" "$fixture/"
  for run in floor counters; do
    mkdir -p "$fixture/$run"
    cp "$work/$run"/ncu.log "$work/$run"/run.json "$fixture/$run/" 2>/dev/null
    for log in "$work/$run"/*.stdout.log "$work/$run"/*.stderr.log; do cp "$log" "$fixture/$run/"; done
  done
  [ -n "$cached_doc" ] && cp "$cached_doc" "$fixture/calibration.json"
  cp "$report" "$fixture/calibrate.json"
  cp "$out/cached_table.out" "$fixture/calibrate.txt"
  nvidia-smi --query-gpu=name,uuid,driver_version,compute_cap,clocks.max.sm,clocks.max.mem --format=csv >"$fixture/nvidia-smi.txt" 2>&1
  # This machine's paths out of every text file.
  grep -rlI -- "$cache" "$fixture" | while read -r f; do sed -i "s#$cache#CACHE#g" "$f"; done
  grep -rlI -- "$out" "$fixture" | while read -r f; do sed -i "s#$out#OUT#g" "$f"; done
  grep -rlI -- "$polyprof" "$fixture" | while read -r f; do sed -i "s#$polyprof#POLYPROF#g" "$f"; done
  ncu_version="$(ncu --version | tail -1)"
  driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  cuda="$(nvcc --version | tail -1)"
  cat >"$fixture/README.md" <<EOF
# \`polyprof calibrate\` on an NVIDIA H200

Captured on $(date -u +%Y-%m-%d) with \`scripts/gpu-calibrate.sh\` ($ncu_version; driver $driver;
nvcc: $cuda). \`polyprof calibrate --force --json --cache-dir CACHE\` compiled \`kernels.cu\`
(the copy here is the source that ran) for the GPU, ran it under ncu twice through polyprof's
pipeline (\`--clock-control none\`, \`--cache-control all\`) and judged the records against
\`plan.json\`.

| file | what |
|---|---|
| \`plan.json\` | the device facts (\`info\`) and every kernel with its amount of work |
| \`kernels.cu\` | the micro-kernels as they ran |
| \`floor/ncu.log\` | the launch-floor pass: ncu's raw-page CSV of the empty kernel's launches (duration only) |
| \`counters/ncu.log\` | the counters pass: each known-work kernel once with the calibration metrics |
| \`floor/\`, \`counters/\` \`*.stdout.log\`, \`*.stderr.log\`, \`run.json\` | the program's own output (one \`kernel=…\` line per kernel) and polyprof's run documents |
| \`calibration.json\` | the cached calibration (what the eval's audit cites) |
| \`calibrate.json\` | \`polyprof calibrate --json\` (untrusted, not checked, above peak) |
| \`calibrate.txt\` | the table of the second run, served from the cache |
| \`info.txt\`, \`nvidia-smi.txt\` | the program's \`info\` and the GPU as nvidia-smi names it |
| \`sass_counts.txt\` | static SASS instruction counts per kernel (cuobjdump) |
| \`fp16_counters.txt\` | the raw FP16 counters of the FP16 kernels |

Checks of this run (scripts/gpu-calibrate.sh's checks.txt):

\`\`\`
$(cat "$checks")
\`\`\`

What the capture shows (to write after reading it):
- copy: DRAM bytes read / written against the known bytes; the share of the bandwidth peak.
- FP32, FP64, FP16 (scalar and packed; see \`sass_counts.txt\` and \`fp16_counters.txt\` for how the
  SASS counter counts \`HFMA2\` and \`HFMA2.MMA\`), tensor FP16, BF16, TF32 and FP8 (wgmma):
  each counter's error and its share of the clock-scaled peak.
- The launch floor.

Read by \`tests/integration/calibrate_h200.rs\` (re-judged from the two ncu logs and \`plan.json\`,
the result must equal \`calibration.json\`).
EOF
  say "   fixture folder: $fixture ($(du -sh "$fixture" | cut -f1)); copy it to tests/fixtures/calibrate-h200/"
else
  check fixture FAIL "no work directory: the calibration was not measured"
fi

failures=$(grep -c '^FAIL ' "$checks")
say "== summary: $failures failing check(s)"
[ "$failures" = 0 ]
