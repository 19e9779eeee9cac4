#!/usr/bin/env bash
# Runner benchmarks, measured side by side in one run; prints figures and ratios.
#   1. end marker -> result latency (child exits 50 ms after the marker; child hangs after it)
#   2. `polyprof run -- CMD` vs the bare CMD on a ~100 ms command
#   3. throughput and peak RSS: 1 GiB of short lines, and one 100 MiB line, through the runner
#      with logs on disk vs `cat` writing the same bytes to a file
#   4. the live echo: the same short lines without -q, echo to /dev/null and to a file, vs -q
#      (goal: within 10 %); with a baseline, its -q and echo to a file too
#   5. `polyprof run -- true`, median of 300, with the supervising subreaper vs group-only
#      tracking vs bare `true` (goal: under 5 ms of overhead on a quiet machine), and with
#      `--tracking cgroup` where a cgroup v2 per run can be created (what it costs per run)
# Environment: RUNS (repetitions, default 5), SIZE_MIB (default 1024), LINE_MIB (default 100);
# BASELINE_REV (a git revision, e.g. fd98609: built once into a temporary worktree and measured
# side by side in sections 1, 3, 4 and 5) or BASELINE_BIN (a polyprof binary already built);
# POLYPROF_BIN: measure this binary instead of building target/release/polyprof.
# Section 5 also prints CPU time (user + system of polyprof, its supervisor and the command,
# from wait4) and page faults, medians of interleaved runs (scripts/bench_rusage.py): on a
# loaded shared machine those swing far less than the wall times.
# Figures from a noisy shared machine: each side is run interleaved and the best run is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
SIZE_MIB=${SIZE_MIB:-1024}
LINE_MIB=${LINE_MIB:-100}

if [ -n "${POLYPROF_BIN:-}" ]; then
  BIN=$POLYPROF_BIN # a polyprof already built (polyprof-supervise beside it)
else
  echo "building release binary..."
  cargo build --release --quiet
  BIN=$PWD/target/release/polyprof
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/polyprof-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
BASE=${BASELINE_BIN:-}
if [ -n "${BASELINE_REV:-}" ] && [ -z "$BASE" ]; then
  echo "building the baseline $BASELINE_REV in a temporary worktree (once; minutes)..."
  git worktree add --detach --quiet "$WORK/base" "$BASELINE_REV"
  trap 'git worktree remove --force "$WORK/base" 2>/dev/null; rm -rf "$WORK"' EXIT
  (cd "$WORK/base" && CARGO_TARGET_DIR="$WORK/base-target" cargo build --release --quiet --bin polyprof)
  BASE=$WORK/base-target/release/polyprof
fi
if [ -n "$BASE" ]; then
  echo "baseline: $BASE ($("$BASE" --version))"
  SIDES=(now base)
else
  SIDES=(now)
fi
bin_of() { if [ "$1" = base ]; then echo "$BASE"; else echo "$BIN"; fi; }

now_ns() { date +%s%N; }
# json_num FIELD FILE: first number after "FIELD": in FILE
json_num() { grep -o "\"$1\": *[-0-9.e]*" "$2" | head -1 | sed 's/.*: *//'; }
stats() { sort -n | awk '{a[NR]=$1} END {printf "median %.1f  min %.1f  max %.1f", a[int((NR+1)/2)], a[1], a[NR]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }

echo
echo "== 1. end marker -> result latency =="
MARKER='=== 1 passed in 0.01s ==='
for side in "${SIDES[@]}"; do : > "$WORK/lat.$side"; : > "$WORK/lat_in.$side"; done
for _ in $(seq "$RUNS"); do
  for side in "${SIDES[@]}"; do
    "$(bin_of "$side")" run --json -q --force --end-marker pytest --output-dir "$WORK/lat.d" -- \
      sh -c "echo '$MARKER'; sleep 0.05; date +%s%N > '$WORK/exit_ns'" > "$WORK/lat.json"
    t1=$(now_ns)
    echo $(( (t1 - $(cat "$WORK/exit_ns")) / 1000 )) | awk '{print $1/1000}' >> "$WORK/lat.$side"
    awk -v e="$(json_num exit_s "$WORK/lat.json")" -v n="$(json_num end_s "$WORK/lat.json")" \
      'BEGIN {print (n - e) * 1000}' >> "$WORK/lat_in.$side"
  done
done
echo "child exits 50 ms after the marker; ms from the child's exit to polyprof's return (target <= 5):"
for side in "${SIDES[@]}"; do
  echo "  [$side] process level (includes run.json, ~1 ms of date(1)): $(stats < "$WORK/lat.$side")"
  echo "  [$side] inside the runner (reaped -> returned):               $(stats < "$WORK/lat_in.$side")"
done

GRACE=1
: > "$WORK/hang"
for _ in $(seq "$RUNS"); do
  "$BIN" run --json -q --force --end-marker pytest --marker-grace $GRACE --kill-grace 2 --output-dir "$WORK/hang.d" -- \
    sh -c "echo '$MARKER'; exec sleep 100" > "$WORK/hang.json" || true
  awk -v m="$(json_num marker_s "$WORK/hang.json")" -v e="$(json_num exit_s "$WORK/hang.json")" -v g=$GRACE \
    'BEGIN {print (e - m - g) * 1000}' >> "$WORK/hang"
done
echo "child hangs after the marker, grace ${GRACE} s; ms past the grace until the child was gone (target <= 50):"
echo "  $(stats < "$WORK/hang")"

echo
echo "== 2. overhead on a ~100 ms command =="
CMD=(sh -c 'seq 1 200; sleep 0.1')
if command -v hyperfine > /dev/null; then
  hyperfine -N --warmup 3 --runs 30 --export-json "$WORK/hf.json" \
    "${CMD[*]@Q}" "$BIN run -q --force --output-dir $WORK/ovh.d -- ${CMD[*]@Q}" > "$WORK/hf.txt" 2>&1 || true
  means=($(grep -o '"mean": *[0-9.e-]*' "$WORK/hf.json" | sed 's/.*: *//'))
  bare=$(awk -v m="${means[0]}" 'BEGIN {print m * 1000}')
  wrapped=$(awk -v m="${means[1]}" 'BEGIN {print m * 1000}')
  echo "  (hyperfine, 30 runs each, means)"
else
  : > "$WORK/bare"; : > "$WORK/wrapped"
  for _ in $(seq 30); do
    t0=$(now_ns); "${CMD[@]}" > /dev/null; t1=$(now_ns)
    echo $(( (t1 - t0) / 1000 )) >> "$WORK/bare"
    t0=$(now_ns); "$BIN" run -q --force --output-dir "$WORK/ovh.d" -- "${CMD[@]}" > /dev/null 2>&1; t1=$(now_ns)
    echo $(( (t1 - t0) / 1000 )) >> "$WORK/wrapped"
  done
  bare=$(awk '{s+=$1} END {print s/NR/1000}' "$WORK/bare")
  wrapped=$(awk '{s+=$1} END {print s/NR/1000}' "$WORK/wrapped")
  echo "  (own loop, 30 interleaved runs each, means; install hyperfine for better figures)"
fi
printf "  bare %.1f ms   polyprof run %.1f ms   ratio %s (target <= 1.05)\n" "$bare" "$wrapped" "$(ratio "$wrapped" "$bare")"

echo
echo "== 3. throughput and peak RSS =="
timed() { # timed OUTFILE CMD...: writes "wall_s rss_kib"
  local out=$1; shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$out" "$@" > /dev/null 2>&1
  else
    local t0 t1; t0=$(now_ns); "$@" > /dev/null; t1=$(now_ns)
    echo "$(( (t1 - t0) / 1000000 ))" | awk '{print $1/1000, "n/a"}' > "$out"
  fi
}
{ yes "0123456789 abcdefghij klmnopqrstuvwxyz 0123456789 ABCDEFGHIJKLMNOP" || true; } | head -c $((SIZE_MIB << 20)) > "$WORK/lines.dat"
{ head -c $((LINE_MIB << 20)) /dev/zero | tr '\0' x; echo; } > "$WORK/line.dat" || true
for data in lines line; do
  f="$WORK/$data.dat"; size=$(stat -c %s "$f")
  for side in cat pipe tee runner marker base; do echo 999999 0 > "$WORK/best.$side"; done
  for _ in $(seq "$RUNS"); do
    rm -f "$WORK/out"; timed "$WORK/t" sh -c "cat '$f' > '$WORK/out'"
    awk 'NR==FNR {b=$1; next} {if ($1 < b) print; else print b, "0"}' "$WORK/best.cat" "$WORK/t" > "$WORK/tmp"; mv "$WORK/tmp" "$WORK/best.cat"
    rm -f "$WORK/out"; timed "$WORK/t" sh -c "cat '$f' | cat > '$WORK/out'"
    awk 'NR==FNR {b=$1; next} {if ($1 < b) print; else print b, "0"}' "$WORK/best.pipe" "$WORK/t" > "$WORK/tmp"; mv "$WORK/tmp" "$WORK/best.pipe"
    rm -f "$WORK/out"; timed "$WORK/t" sh -c "cat '$f' | tee '$WORK/out'"
    awk 'NR==FNR {b=$1; next} {if ($1 < b) print; else print b, "0"}' "$WORK/best.tee" "$WORK/t" > "$WORK/tmp"; mv "$WORK/tmp" "$WORK/best.tee"
    rm -f "$WORK/out"
    if [ -n "$BASE" ]; then
      rm -rf "$WORK/run.d"; timed "$WORK/t" "$BASE" run -q --log-cap-mib 4096 --output-dir "$WORK/run.d" -- cat "$f"
      awk 'NR==FNR {b=$1; next} {if ($1 < b) print; else print b, "0"}' "$WORK/best.base" "$WORK/t" > "$WORK/tmp"; mv "$WORK/tmp" "$WORK/best.base"
    fi
    rm -rf "$WORK/run.d"; timed "$WORK/t" "$BIN" run -q --log-cap-mib 4096 --output-dir "$WORK/run.d" -- cat "$f"
    logged=$(stat -c %s "$WORK/run.d/run.1.stdout.log")
    [ "$logged" = "$size" ] || { echo "log has $logged bytes, expected $size"; exit 1; }
    cat "$WORK/t" >> "$WORK/rss.$data"
    awk 'NR==FNR {b=$1; next} {if ($1 < b) print; else print b, "0"}' "$WORK/best.runner" "$WORK/t" > "$WORK/tmp"; mv "$WORK/tmp" "$WORK/best.runner"
    rm -rf "$WORK/run.d"; timed "$WORK/t" "$BIN" run -q --end-marker pytest --log-cap-mib 4096 --output-dir "$WORK/run.d" -- cat "$f"
    cat "$WORK/t" >> "$WORK/rss.$data"
    awk 'NR==FNR {b=$1; next} {if ($1 < b) print; else print b, "0"}' "$WORK/best.marker" "$WORK/t" > "$WORK/tmp"; mv "$WORK/tmp" "$WORK/best.marker"
    rm -rf "$WORK/run.d"
  done
  rss=$(awk '$2 != "n/a" && $2 > m {m=$2} END {if (m) printf "%.1f MiB", m/1024; else print "n/a"}' "$WORK/rss.$data")
  mib=$(awk -v s="$size" 'BEGIN {print s / 1048576}')
  read -r cat_s _ < "$WORK/best.cat"; read -r pipe_s _ < "$WORK/best.pipe"
  read -r run_s _ < "$WORK/best.runner"; read -r mark_s _ < "$WORK/best.marker"
  read -r tee_s _ < "$WORK/best.tee"; read -r base_s _ < "$WORK/best.base"
  echo "$data: $mib MiB ($( [ $data = lines ] && echo 'short lines' || echo 'one line' )), best of $RUNS, MiB/s:"
  printf "  cat > file (copy_file_range)   %8.0f\n" "$(awk -v m=$mib -v t=$cat_s 'BEGIN {print m/t}')"
  printf "  cat | cat > file (via a pipe)  %8.0f\n" "$(awk -v m=$mib -v t=$pipe_s 'BEGIN {print m/t}')"
  printf "  cat | tee file (a pipe, a copy) %7.0f\n" "$(awk -v m=$mib -v t=$tee_s 'BEGIN {print m/t}')"
  printf "  polyprof run, logs on disk     %8.0f   ratio vs cat %s (target >= 0.7), vs pipe %s (target >= 1), vs tee %s\n" \
    "$(awk -v m=$mib -v t=$run_s 'BEGIN {print m/t}')" "$(ratio "$cat_s" "$run_s")" "$(ratio "$pipe_s" "$run_s")" "$(ratio "$tee_s" "$run_s")"
  [ "$data" = lines ] && { lines_pipe_s=$pipe_s; lines_tee_s=$tee_s; }
  if [ -n "$BASE" ]; then
    printf "  [base] polyprof run, on disk   %8.0f   ratio vs pipe %s, vs tee %s\n" \
      "$(awk -v m=$mib -v t=$base_s 'BEGIN {print m/t}')" "$(ratio "$pipe_s" "$base_s")" "$(ratio "$tee_s" "$base_s")"
  fi
  printf "  ... with --end-marker pytest   %8.0f   ratio vs cat %s, vs pipe %s\n" \
    "$(awk -v m=$mib -v t=$mark_s 'BEGIN {print m/t}')" "$(ratio "$cat_s" "$mark_s")" "$(ratio "$pipe_s" "$mark_s")"
  echo "  polyprof peak RSS: $rss (target <= 64 MiB)"
done

echo
echo "== 4. live echo (no -q) vs -q =="
f="$WORK/lines.dat"; mib=$(awk -v s="$(stat -c %s "$f")" 'BEGIN {print s / 1048576}')
for side in quiet null file bquiet bfile; do echo 999999 > "$WORK/best.$side"; done
keep_best() { awk -v t="$2" '{print (t < $1) ? t : $1}' "$WORK/best.$1" > "$WORK/tmp"; mv "$WORK/tmp" "$WORK/best.$1"; }
for _ in $(seq "$RUNS"); do
  rm -rf "$WORK/e.d"; t0=$(now_ns)
  "$BIN" run -q --log-cap-mib 4096 --output-dir "$WORK/e.d" -- cat "$f" > /dev/null 2>&1
  keep_best quiet "$(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN {print (b - a) / 1e9}')"
  rm -rf "$WORK/e.d"; t0=$(now_ns)
  "$BIN" run --log-cap-mib 4096 --output-dir "$WORK/e.d" -- cat "$f" > /dev/null 2> /dev/null
  keep_best null "$(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN {print (b - a) / 1e9}')"
  rm -rf "$WORK/e.d" "$WORK/echo.out"; t0=$(now_ns)
  # The command's stdout is echoed on polyprof's stdout (its stderr on stderr).
  "$BIN" run --log-cap-mib 4096 --output-dir "$WORK/e.d" -- cat "$f" > "$WORK/echo.out" 2> /dev/null
  keep_best file "$(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN {print (b - a) / 1e9}')"
  echoed=$(stat -c %s "$WORK/echo.out")
  if [ -n "$BASE" ]; then
    rm -rf "$WORK/e.d"; t0=$(now_ns)
    "$BASE" run -q --log-cap-mib 4096 --output-dir "$WORK/e.d" -- cat "$f" > /dev/null 2>&1
    keep_best bquiet "$(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN {print (b - a) / 1e9}')"
    rm -rf "$WORK/e.d" "$WORK/echo.out"; t0=$(now_ns)
    "$BASE" run --log-cap-mib 4096 --output-dir "$WORK/e.d" -- cat "$f" > "$WORK/echo.out" 2> /dev/null
    keep_best bfile "$(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN {print (b - a) / 1e9}')"
  fi
done
read -r q_s < "$WORK/best.quiet"; read -r n_s < "$WORK/best.null"; read -r e_s < "$WORK/best.file"
echo "$mib MiB of short lines, best of $RUNS, seconds (ratio vs -q; goal <= 1.10):"
printf "  -q                    %6.2f\n" "$q_s"
printf "  echo to /dev/null     %6.2f   %s\n" "$n_s" "$(ratio "$n_s" "$q_s")"
printf "  echo to a file        %6.2f   %s   (%s of %s bytes echoed; the rest dropped, counted)\n" \
  "$e_s" "$(ratio "$e_s" "$q_s")" "$echoed" "$(stat -c %s "$f")"
if [ -n "$BASE" ]; then
  read -r bq_s < "$WORK/best.bquiet"; read -r be_s < "$WORK/best.bfile"
  printf "  [base] -q             %6.2f\n" "$bq_s"
  printf "  [base] echo to a file %6.2f   %s\n" "$be_s" "$(ratio "$be_s" "$bq_s")"
fi
printf "  vs section 3's pipe and tee (same bytes; target >= 1): -q %s %s, echo to a file %s %s\n" \
  "$(ratio "$lines_pipe_s" "$q_s")" "$(ratio "$lines_tee_s" "$q_s")" "$(ratio "$lines_pipe_s" "$e_s")" "$(ratio "$lines_tee_s" "$e_s")"
rm -f "$WORK/echo.out" "$WORK/lines.dat" "$WORK/line.dat"

echo
echo "== 5. run -- true: cost of descendant tracking =="
N=${TRUE_RUNS:-300}
CGROUP=$("$BIN" doctor 2>/dev/null | grep -q 'cgroup v2 per run: available' && echo yes || echo no)
: > "$WORK/t.bare"; : > "$WORK/t.sup"; : > "$WORK/t.grp"; : > "$WORK/t.cg"; : > "$WORK/t.base"
for _ in $(seq "$N"); do
  t0=$(now_ns); true; /bin/true; t1=$(now_ns); echo $(( (t1 - t0) / 1000 )) >> "$WORK/t.bare"
  t0=$(now_ns); "$BIN" run -q --force --output-dir "$WORK/s.d" -- true > /dev/null 2>&1; t1=$(now_ns)
  echo $(( (t1 - t0) / 1000 )) >> "$WORK/t.sup"
  t0=$(now_ns); "$BIN" run -q --force --tracking group --output-dir "$WORK/g.d" -- true > /dev/null 2>&1; t1=$(now_ns)
  echo $(( (t1 - t0) / 1000 )) >> "$WORK/t.grp"
  if [ -n "$BASE" ]; then
    t0=$(now_ns); "$BASE" run -q --force --output-dir "$WORK/b.d" -- true > /dev/null 2>&1; t1=$(now_ns)
    echo $(( (t1 - t0) / 1000 )) >> "$WORK/t.base"
  fi
  if [ "$CGROUP" = yes ]; then
    t0=$(now_ns); "$BIN" run -q --force --tracking cgroup --output-dir "$WORK/c.d" -- true > /dev/null 2>&1; t1=$(now_ns)
    echo $(( (t1 - t0) / 1000 )) >> "$WORK/t.cg"
  fi
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)] / 1000}'; }
b=$(med "$WORK/t.bare"); s=$(med "$WORK/t.sup"); g=$(med "$WORK/t.grp")
echo "median of $N interleaved runs, ms:"
printf "  bare /bin/true                 %6.2f\n" "$b"
printf "  run, group tracking            %6.2f   overhead %.2f\n" "$g" "$(awk -v a="$g" -v b="$b" 'BEGIN {print a - b}')"
printf "  run, supervisor (default)      %6.2f   overhead %.2f (goal <= 3); tracking costs %.2f\n" \
  "$s" "$(awk -v a="$s" -v b="$b" 'BEGIN {print a - b}')" "$(awk -v a="$s" -v b="$g" 'BEGIN {print a - b}')"
if [ -n "$BASE" ]; then
  a=$(med "$WORK/t.base")
  printf "  [base] run, supervisor         %6.2f   overhead %.2f\n" "$a" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a - b}')"
fi
echo "CPU time and page faults, median of ${CPU_RUNS:-100} interleaved runs (wall ms, CPU ms, faults):"
cpu_cmds=(true=/bin/true "now=$BIN run -q --force --output-dir $WORK/u.d -- true"
  "now-group=$BIN run -q --force --tracking group --output-dir $WORK/v.d -- true")
[ -n "$BASE" ] && cpu_cmds+=("base=$BASE run -q --force --output-dir $WORK/w.d -- true"
  "base-group=$BASE run -q --force --tracking group --output-dir $WORK/x.d -- true")
python3 scripts/bench_rusage.py "${CPU_RUNS:-100}" "${cpu_cmds[@]}" > "$WORK/cpu"
awk -F'\t' 'NR == 1 {bw = $2; bc = $3; bf = $4}
  {printf "  %-11s wall %6.2f  CPU %5.2f  faults %4d", $1, $2, $3, $4
   if (NR > 1) printf "   over true: wall %+.2f  CPU %+.2f  faults %+d", $2 - bw, $3 - bc, $4 - bf
   print ""}' "$WORK/cpu"
echo "  (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "$CGROUP" = yes ]; then
  c=$(med "$WORK/t.cg")
  printf "  run, --tracking cgroup         %6.2f   overhead %.2f; the cgroup costs %.2f\n" \
    "$c" "$(awk -v a="$c" -v b="$b" 'BEGIN {print a - b}')" "$(awk -v a="$c" -v b="$s" 'BEGIN {print a - b}')"
else
  echo "  (no cgroup v2 per run here: --tracking cgroup not measured; see polyprof doctor)"
fi
