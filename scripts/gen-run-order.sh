#!/usr/bin/env bash
# Regenerate build/run-order.txt: the functions of the polyprof executable that `polyprof run`
# executes (polyprof and its forked supervisor), in the order first executed. build.rs hands
# the list to the linker (lld's --symbol-ordering-file), which places these functions side by
# side: a run then faults in a few dozen 64 KiB windows of the 23 MB executable instead of
# ~150 scattered ones (issue 37, docs/runner.md "fifth pass"). A stale list only places fewer
# functions (unknown names are skipped); regenerate it after large changes to the run path.
# The names carry Rust's symbol hashes, which change with the dependency versions and features
# (Cargo.lock; a `cargo test` build unifies dev-dependency features and gets other names) and
# the toolchain: `--check` says how much of the list a binary still has.
# Needs valgrind (callgrind) and nm.
# Usage: scripts/gen-run-order.sh [POLYPROF_BIN]    (default: build target/release/polyprof)
#        scripts/gen-run-order.sh --check [POLYPROF_BIN]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --check ]; then
  BIN=${2:-target/release/polyprof}
  nm -S --defined-only "$BIN" | python3 -c '
import sys
order = open("build/run-order.txt").read().split()
wanted = set(order)
found = {p[3]: int(p[0], 16) for p in (l.split() for l in sys.stdin) if len(p) == 4 and p[3] in wanted}
windows = len(set(a >> 16 for a in found.values()))
print(f"{len(found)} of {len(order)} listed functions found in the binary, in {windows} 64 KiB windows")
'
  exit 0
fi
BIN=${1:-}
if [ -z "$BIN" ]; then
  cargo build --release --quiet --bin polyprof
  BIN=$PWD/target/release/polyprof
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/polyprof-order.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# The run path's common forms: quiet and echoed, the supervisor and group tracking, --json,
# a fresh output directory and --force over an old run, a command that prints.
variants=(
  "run -q --output-dir $WORK/a.d -- true"
  "run -q --force --output-dir $WORK/a.d -- true"
  "run --output-dir $WORK/b.d -- sh -c 'echo out; echo err >&2'"
  "run -q --tracking group --output-dir $WORK/c.d -- true"
  "run --json -q --output-dir $WORK/d.d -- false"
)
i=0
for v in "${variants[@]}"; do
  i=$((i + 1))
  eval "valgrind --tool=callgrind --demangle=no --callgrind-out-file=$WORK/cg.$i.%p \"\$BIN\" $v" \
    > /dev/null 2> "$WORK/vg.$i.log" || true
done
nm --defined-only "$BIN" | awk '$2 ~ /^[tTwW]$/ {print $3}' > "$WORK/syms"
python3 - "$WORK" > build/run-order.txt <<'PY'
import glob, os, re, sys
work = sys.argv[1]
syms = set(open(os.path.join(work, "syms")).read().split())
seen, order = set(), []
# Parent before supervisor within each variant (callgrind names its outputs by pid).
for path in sorted(glob.glob(os.path.join(work, "cg.*")), key=lambda p: (int(p.split(".")[-2]), int(p.split(".")[-1]))):
    for line in open(path):
        m = re.match(r"c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
        if m and m.group(1) in syms and m.group(1) not in seen:
            seen.add(m.group(1))
            order.append(m.group(1))
print("\n".join(order))
PY
echo "build/run-order.txt: $(wc -l < build/run-order.txt) functions"
