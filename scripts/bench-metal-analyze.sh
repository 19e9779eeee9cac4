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
import json, os, subprocess, sys, time
from metal_profiler import profiler
binary, path, runs, python = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
text = open(path).read()

def child(argv):
    """(wall ms, CPU ms) of a child process; CPU (user+sys) is what a loaded machine
    does not inflate."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t) * 1e3
    assert os.waitstatus_to_exitcode(status) == 0, argv
    return wall, (usage.ru_utime + usage.ru_stime) * 1e3

def inproc():
    t, c = time.perf_counter(), time.process_time()
    profiler.analyze(profiler.parse_disassembly(text))
    return (time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3

def best(f):
    samples = [f() for _ in range(runs)]
    return min(s[0] for s in samples), min(s[1] for s in samples)

out = subprocess.run([binary, "metal", "analyze", "--json", path], check=True, capture_output=True).stdout
ours = json.loads(out)
theirs = profiler.parse_disassembly(text)
assert ours["instruction_count"] == len(theirs), (ours["instruction_count"], len(theirs))
py_code = ("import sys; from metal_profiler import profiler; "
           "profiler.analyze(profiler.parse_disassembly(open(sys.argv[1]).read()))")
rw, rc = best(lambda: child([binary, "metal", "analyze", "--json", path]))
iw, ic = best(inproc)
pw, pc = best(lambda: child([python, "-c", py_code, path]))
print(f"listing: {ours['instruction_count']} instructions, {len(ours['loops'])} loops; best of {runs}; "
      f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
print(f"{'':48} {'wall ms':>9} {'CPU ms':>9} {'wall x':>7} {'CPU x':>7}")
print(f"{'polyprof metal analyze --json (process)':48} {rw:9.1f} {rc:9.1f}")
print(f"{'metal-profiler parse+analyze (in-process)':48} {iw:9.1f} {ic:9.1f} {iw / rw:7.1f} {ic / max(rc, 1e-9):7.1f}")
print(f"{'metal-profiler parse+analyze (process)':48} {pw:9.1f} {pc:9.1f} {pw / rw:7.1f} {pc / max(rc, 1e-9):7.1f}")
PY
