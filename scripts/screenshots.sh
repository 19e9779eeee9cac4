#!/usr/bin/env bash
# Regenerates the README's page screenshots under docs/images (800 and 1280 px): the bundled
# H200 capture's report, its diff against the regressed fixture, and the page of a small batch
# (12 shell jobs on the CPU, two failing and one timing out; the same job file each time).
# Needs headless Chromium (`chromium`); pngquant, when installed, shrinks the PNGs.
# Usage: scripts/screenshots.sh [POLYPROF_BINARY]   (default: target/debug/polyprof)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
polyprof=${1:-$repo/target/debug/polyprof}
chromium=$(command -v chromium || command -v chromium-browser)
images=$repo/docs/images
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$polyprof" report "$repo/tests/fixtures/runs/h200-baseline" --format html -o "$work/h200.html"
"$polyprof" diff "$repo/tests/fixtures/runs/h200-baseline" "$repo/tests/fixtures/runs/h200-regressed" \
  --format html -o "$work/diff.html" || true # exit 1: the diff gates (a regression)

# Job ids as a kernel search names its candidates; a failure, a build error, a timeout.
: >"$work/jobs.jsonl"
index=0
for id in gemm-bf16-4096-tile128 gemm-bf16-4096-tile256 softmax-fused-v3 layernorm-welford \
  attention-flash-v2 rmsnorm-vectorized gemm-fp8-8192-splitk conv2d-implicit-gemm \
  reduce-sum-warp-shuffle transpose-smem-padded topk-radix-select scan-decoupled-lookback; do
  case $index in
    2 | 7) script='echo building; exit 3'; timeout='' ;;
    10) script='sleep 30'; timeout=', "timeout_s": 1' ;;
    *) script='sleep 0.2; echo ok'; timeout='' ;;
  esac
  printf '{"id": "%s", "target": ["sh", "-c", "%s"]%s}\n' "$id" "$script" "$timeout" >>"$work/jobs.jsonl"
  index=$((index + 1))
done
# Relative paths: the page's title and first line name them.
(cd "$work" && "$polyprof" batch jobs.jsonl --output-dir batch --devices cpu --jobs 2 -q) || true # exit 1: jobs failed
(cd "$work" && "$polyprof" report batch --format html -o batch.html)

shoot() { # page, image name, width, height
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size="$3,$4" --screenshot="$images/$2" "file://$work/$1" 2>/dev/null
  if command -v pngquant >/dev/null; then
    pngquant --force --skip-if-larger --quality 60-85 --output "$images/$2" "$images/$2" || true
  fi
  echo "$images/$2: $(wc -c <"$images/$2") bytes"
}
shoot h200.html roofline-h200.png 960 940
shoot h200.html report-h200-800.png 800 1800
shoot h200.html report-h200-1280.png 1280 1800
shoot diff.html report-diff-800.png 800 1800
shoot diff.html report-diff-1280.png 1280 1800
shoot batch.html report-batch-800.png 800 690
shoot batch.html report-batch-1280.png 1280 560
