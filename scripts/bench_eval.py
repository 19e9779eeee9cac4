#!/usr/bin/env python3
"""The body of scripts/bench-eval.sh (usage and settings are documented there): per problem,
KernelBench's cuda_event time, triton's do_bench, polyprof's score and witness times and plain
ncu's gpu__time_duration side by side, and the wall time of an eval with and without the
witness. Standard library only; torch runs in bench_eval_driver.py's processes."""

from __future__ import annotations

import csv
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_runs import Budget, Report, figures, ms, ratio, run_eval  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "eval" / "gpu"
DRIVER = Path(__file__).resolve().parent / "bench_eval_driver.py"
PYTHON = os.environ.get("POLYPROF_PYTHON", "python3")

OWN_PROBLEMS = ["relu", "matmul", "add", "softmax"]
KB_PROBLEMS = os.environ.get(
    "BENCH_KB",
    "1_Square_matrix_multiplication_ 9_Tall_skinny_matrix_multiplication_ 40_LayerNorm "
    "50_conv_standard_2D__square_input__square_kernel 88_MinGPTNewGelu 95_CrossEntropyLoss",
).split()
EVAL_ARGS = shlex.split(os.environ.get("BENCH_EVAL_ARGS", "--blocks 3"))
BUDGET_S = float(os.environ.get("BENCH_BUDGET_S", "540"))
NCU_CALLS = int(os.environ.get("BENCH_NCU_CALLS", "5"))
STEP_TIMEOUT_S = 240.0
#: A problem is not started with less than this left of the budget (seconds).
MIN_LEFT_S = 60.0
#: ncu's time units, in milliseconds.
UNIT_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0,
           "s": 1e3, "second": 1e3}


def driver_json(argv: List[str], log: Path, timeout: float) -> Optional[Dict[str, Any]]:
    """Run a command whose output ends with `BENCH {json}`; its output kept in `log`."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        text = done.stdout + done.stderr
    except subprocess.TimeoutExpired as error:
        text = f"timed out after {timeout:.0f} s\n{error.stdout or ''}{error.stderr or ''}"
    except OSError as error:
        text = f"{argv[0]}: {error}"
    log.write_text("$ " + shlex.join(argv) + "\n" + text)
    for line in reversed(text.splitlines()):
        if line.startswith("BENCH "):
            return json.loads(line[len("BENCH "):])
    return None


def ncu_ms_per_call(log: Path, calls: int) -> Optional[float]:
    """Sum of gpu__time_duration over the profiled launches, per call (ncu --csv --page raw)."""
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.startswith('"')]
    except OSError:
        return None
    rows = list(csv.reader(lines))
    header = next((i for i, row in enumerate(rows) if "gpu__time_duration.sum" in row), None)
    if header is None:
        return None
    column = rows[header].index("gpu__time_duration.sum")
    scale = UNIT_MS["ns"]
    total = 0.0
    launches = 0
    for row in rows[header + 1:]:
        if column >= len(row):
            continue
        cell = row[column].replace(",", "").strip()
        try:
            total += float(cell)
            launches += 1
        except ValueError:
            scale = UNIT_MS.get(cell, scale)  # the units row
    return total * scale / calls if launches else None


def problems(kb_dir: Optional[Path]) -> List["tuple[str, Path]"]:
    chosen = [(name, CORPUS / f"{name}.py") for name in OWN_PROBLEMS]
    if kb_dir is not None:
        level1 = (kb_dir / "KernelBench" / "level1") if (kb_dir / "KernelBench").is_dir() else kb_dir / "level1"
        for stem in KB_PROBLEMS:
            chosen.append((f"kb1_{stem}", level1 / f"{stem}.py"))
    return chosen


def over(value: Optional[float], base: Optional[float]) -> str:
    """`value` in ms and as a ratio to `base` (ncu's figure)."""
    if value is None:
        return "-"
    return f"{value:.4f} ({value / base:.2f}x)" if base else f"{value:.4f}"


ROW = "{:<44} {:<19} {:<19} {:<19} {:<19} {:>9} {:>7} {:>7} {:>6}"


def main(argv: List[str]) -> int:
    if len(argv) < 3:
        print(f"usage: {argv[0]} POLYPROF OUTDIR [KERNELBENCH_DIR]", file=sys.stderr)
        return 2
    polyprof = str(Path(argv[1]).resolve())
    out = Path(argv[2]).resolve()
    kb_dir = Path(argv[3]).resolve() if len(argv) > 3 else None
    timing_py = kb_dir / "src" / "kernelbench" / "timing.py" if kb_dir is not None else None
    for sub in ("logs", "candidates", "evals"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    report = Report(out / "summary.txt")
    budget = Budget(BUDGET_S)
    kb_source = str(timing_py) if timing_py is not None and timing_py.is_file() else "re-implemented loop"
    report.line(f"== bench-eval: KernelBench cuda_event ({kb_source}; mean of "
                f"{os.environ.get('BENCH_KB_TRIALS', '20')} trials), triton do_bench (median), polyprof "
                f"score and witness (medians; polyprof eval {shlex.join(EVAL_ARGS)}), ncu gpu__time_duration "
                f"(--clock-control none, sum per call over {NCU_CALLS} calls); (Nx) = ratio to ncu")
    report.line(ROW.format("problem", "kb_event ms", "do_bench ms", "score ms", "witness ms", "ncu ms",
                           "wall w", "wall -", "w/-"))
    wall_ratios = []
    for name, problem in problems(kb_dir):
        if not problem.is_file():
            report.line(f"{name}: {problem} not found, skipped")
            continue
        if budget.left() < MIN_LEFT_S:
            report.line(f"{name}: not run (time budget)")
            continue
        timed = driver_json([PYTHON, str(DRIVER), "time", str(problem), str(timing_py or "")],
                            out / "logs" / f"{name}.time.log", STEP_TIMEOUT_S) or {}
        ncu_log = out / "logs" / f"{name}.ncu.csv"
        driver_json(["ncu", "--csv", "--page", "raw", "--print-units", "base", "--metrics",
                     "gpu__time_duration.sum", "--clock-control", "none", "--profile-from-start", "off",
                     "--log-file", str(ncu_log), PYTHON, str(DRIVER), "ncu", str(problem), str(NCU_CALLS)],
                    out / "logs" / f"{name}.ncu.log", STEP_TIMEOUT_S)
        ncu_ms = ncu_ms_per_call(ncu_log, NCU_CALLS)
        candidate = out / "candidates" / f"{name}.py"
        candidate.write_text(problem.read_text() + "\n\nModelNew = Model\n")
        runs = {}
        for label, extra in (("witness", []), ("none", ["--profiler", "none"])):
            eval_dir = out / "evals" / f"{name}.{label}"
            if eval_dir.exists():
                raise SystemExit(f"{eval_dir} exists: choose a fresh OUTDIR")
            limit = min(STEP_TIMEOUT_S, max(10.0, budget.left() - 5))
            runs[label] = run_eval(polyprof, problem, candidate, eval_dir, EVAL_ARGS + extra, limit,
                                   out / "logs" / f"{name}.eval-{label}.log")
        got = figures(runs["witness"].verdict)
        wall_w, wall_n = runs["witness"].wall_s, runs["none"].wall_s
        wall_ratios.append(wall_w / wall_n)
        report.line(ROW.format(name[:44], over(timed.get("kb_event_mean_ms"), ncu_ms),
                               over(timed.get("do_bench_median_ms"), ncu_ms), over(got["score_ms"], ncu_ms),
                               over(got["witness_ms"], ncu_ms), ms(ncu_ms), f"{wall_w:.1f}", f"{wall_n:.1f}",
                               ratio(wall_w / wall_n)))
        if got["status"] != "correct" or got["findings"]:
            report.line(f"   note: {name} came back {got['status']} {' '.join(got['findings'])} "
                        f"(see {runs['witness'].log})")
    if wall_ratios:
        # The goal bounds what the witness pass adds: (with − without) / without <= 1.5.
        worst = max(wall_ratios)
        report.line(f"\nwall with witness / without: max {worst:.2f}; the witness adds at most "
                    f"{worst - 1:.2f}x the eval without it (goal: adds <= 1.5x: "
                    f"{'met' if worst - 1 <= 1.5 else 'NOT met'})")
    report.line(f"wall: {budget.elapsed():.0f} s (budget {BUDGET_S:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
