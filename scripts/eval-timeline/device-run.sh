#!/usr/bin/env bash
# On a CUDA machine: build polyprof's tracer (src/profilers/ncu/trace.c) with nvcc against the
# toolkit's CUPTI, then capture every candidate of scripts/eval-timeline/candidates/ under it
# (capture.py), and the work pass (ncu) of a few. Usage: device-run.sh SRC_DIR OUT_DIR
set -u
SRC=$1
OUT=$2
mkdir -p "$OUT/cap"
NVCC=$(readlink -f "$(command -v nvcc)")
CUDA=$(dirname "$(dirname "$NVCC")")
INC=""; LIB=""
for d in include targets/x86_64-linux/include extras/CUPTI/include; do
  [ -f "$CUDA/$d/cupti.h" ] && [ -z "$INC" ] && INC="$CUDA/$d"
done
for d in lib64 targets/x86_64-linux/lib extras/CUPTI/lib64; do
  [ -e "$CUDA/$d/libcupti.so" ] && [ -z "$LIB" ] && LIB="$CUDA/$d"
done
{
  echo "nvcc $NVCC"; nvcc --version | tail -2; echo "cupti include $INC lib $LIB"
  nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader
  ncu --version | tail -1
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} > "$OUT/cap/versions.txt" 2>&1
cat "$OUT/cap/versions.txt"
LIBSO=/tmp/libpolyprof_trace.so
nvcc -shared -Xcompiler -fPIC -O2 -I"$INC" -L"$LIB" -Xlinker -rpath="$LIB" -lcupti \
  -o "$LIBSO" "$SRC/trace.c" 2>&1 | tee "$OUT/cap/build.log" || exit 1
[ -f "$LIBSO" ] || { echo "tracer did not build"; exit 1; }
# Sanity: a small torch program under the tracer.
mkdir -p /tmp/sanity
CUDA_INJECTION64_PATH=$LIBSO POLYPROF_TRACE_DIR=/tmp/sanity python3 -c '
import torch, threading
a = torch.randn(1024, 1024, device="cuda"); b = a @ a; torch.cuda.synchronize()
t = threading.Thread(target=lambda: (a + 1).sum().item()); t.start(); t.join()
x = torch.empty(12345 * 16, dtype=torch.uint8, device="cuda"); x.zero_(); y = x.cpu()
'
echo "--- sanity trace"; cut -c1-200 /tmp/sanity/trace-*.tsv | grep -v '^M' | head -40; grep -c . /tmp/sanity/trace-*.tsv
pack() { (cd "$OUT/cap" && tar czf "$OUT/captures.tgz" --exclude='*.bin' .); }
run() { # name problem [ncu]
  local name=$1 problem=$2 mode=${3:-trace} dest="$OUT/cap/$1"
  [ "$mode" = ncu ] && dest="$OUT/cap/$1.ncu"
  local extra=()
  [ "$mode" = ncu ] && extra=(--ncu "$(command -v ncu)")
  local t0=$SECONDS
  timeout 120 python3 "$SRC/capture.py" --harness "$SRC/harness" --tracer "$LIBSO" \
    --reference "$SRC/problems/$problem.py" --candidate "$SRC/candidates/$name.py" --out "$dest" "${extra[@]}" \
    > "$dest.log" 2>&1
  echo "$name $mode rc=$? $((SECONDS - t0))s: $(tail -1 "$dest.log" | cut -c1-300)"
  ls "$dest"/trace/*.bin 2>/dev/null | wc -l | sed 's/^/  module images: /'
  pack
}
run honest_matmul_cublas matmul
run hack_pushed_timing matmul
run hack_wrapped_full matmul
run hack_phantom_call relu
run hack_flood_after_return relu
run hack_side_stream matmul
run hack_graph_fifth matmul
run hack_profiler_stop matmul
run honest_add_triton add
run honest_relu_inline relu
run hack_profiler_stop matmul ncu
run honest_matmul_cublas matmul ncu
run honest_add_triton add ncu
run honest_relu_inline relu ncu
pack
ls -la "$OUT"
