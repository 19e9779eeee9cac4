#!/usr/bin/env bash
# Benchmark: `polyprof metal analyze` on a 20,000-instruction applegpu listing against the
# metal-profiler 0.1.1 wheel's parse_disassembly + analyze on the same text, in one run.
#
#   PYTHON=/path/to/venv/bin/python scripts/bench-metal-analyze.sh [INSTRUCTIONS] [RUNS]
#
# PYTHON must have `metal-profiler==0.1.1` installed (pip install metal-profiler==0.1.1).
# Prints best-of-RUNS wall times and the ratios:
#   - polyprof process (start, parse, analyze, JSON to /dev/null) vs the same Python work
#     measured inside the interpreter (no interpreter start, no import, no output): a lower
#     bound for Python;
#   - polyprof process vs a whole Python process doing the same.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
N="${1:-20000}"
RUNS="${2:-5}"
if ! "$PYTHON" -c "import metal_profiler.profiler" 2>/dev/null; then
  echo "bench-metal-analyze: $PYTHON cannot import metal_profiler; install it with" >&2
  echo "  $PYTHON -m pip install metal-profiler==0.1.1   (or set PYTHON to a venv's python)" >&2
  exit 2
fi
cargo build --release --quiet
BIN="$PWD/target/release/polyprof"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$PYTHON" - "$N" "$WORK/big.asm" tests/fixtures/metal/applegpu_simple_call.asm <<'PY'
import re, sys
n, out, src = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lines = open(src).read().splitlines()
pat = re.compile(r'^\s*([0-9a-f]+): (\S+)(\s+)(\S+)(.*)$')
body = [pat.match(l) for l in lines]
stride = 0x200  # each copy sits after the previous one, jump targets shifted with it
res, count, copy = [], 0, 0
while count < n:
    shift = copy * stride
    for l, m in zip(lines, body):
        if m is None:
            if l.strip():
                res.append(l)
            continue
        if count == n:
            break
        off, raw, sp, mnem, rest = m.groups()
        if mnem.startswith("jmp_") or mnem == "call":
            rest = re.sub(r'0x([0-9A-Fa-f]+)', lambda t: '0x%X' % (int(t.group(1), 16) + shift), rest)
        res.append('%4x: %s%s%s%s' % (int(off, 16) + shift, raw, sp, mnem, rest))
        count += 1
    res.append('')
    copy += 1
open(out, 'w').write('\n'.join(res) + '\n')
PY

"$PYTHON" - "$BIN" "$WORK/big.asm" "$RUNS" "$PYTHON" <<'PY'
import json, subprocess, sys, time
from metal_profiler import profiler
binary, path, runs, python = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
text = open(path).read()

def best(f):
    times = []
    for _ in range(runs):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return min(times) * 1e3

def rust():
    subprocess.run([binary, "metal", "analyze", "--json", path], check=True, stdout=subprocess.DEVNULL)

def py_inproc():
    profiler.analyze(profiler.parse_disassembly(text))

py_code = ("import sys; from metal_profiler import profiler; "
           "profiler.analyze(profiler.parse_disassembly(open(sys.argv[1]).read()))")
def py_process():
    subprocess.run([python, "-c", py_code, path], check=True)

out = subprocess.run([binary, "metal", "analyze", "--json", path], check=True, capture_output=True).stdout
ours = json.loads(out)
theirs = profiler.parse_disassembly(text)
assert ours["instruction_count"] == len(theirs), (ours["instruction_count"], len(theirs))
r, pi, pp = best(rust), best(py_inproc), best(py_process)
print(f"listing: {ours['instruction_count']} instructions, {len(ours['loops'])} loops, best of {runs}")
print(f"polyprof metal analyze --json (whole process): {r:9.1f} ms")
print(f"metal-profiler parse+analyze (in-process):     {pi:9.1f} ms   ratio {pi / r:6.1f}x")
print(f"metal-profiler parse+analyze (whole process):  {pp:9.1f} ms   ratio {pp / r:6.1f}x")
PY
