"""Running `polyprof eval` from the GPU scripts (gpu_eval.py, bench_eval.py) and reading what it
wrote: one place for the command line, the wall-clock limit, the verdict's figures and the
report that is printed and kept in summary.txt at once. Standard library only."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

#: After SIGTERM, how long polyprof gets to stop its workers before SIGKILL (seconds).
TERM_GRACE_S = 20


@dataclass
class EvalRun:
    """One `polyprof eval`: its exit status (None when killed at the wall limit), wall time,
    the verdict it wrote (None when there is none) and its log."""

    exit_code: Optional[int]
    wall_s: float
    verdict: Optional[Dict[str, Any]]
    log: Path


def run_eval(
    polyprof: str,
    reference: Path,
    candidate: Path,
    output_dir: Path,
    args: List[str],
    wall_limit_s: float,
    log: Path,
) -> EvalRun:
    argv = [
        polyprof, "eval", "--reference", str(reference), "--candidate", str(candidate),
        "--output-dir", str(output_dir), "--json", *args,
    ]
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "w") as log_file:
        log_file.write("$ " + shlex.join(argv) + "\n")
        log_file.flush()
        # Its own session, so that the wall limit can stop polyprof and whatever it started.
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=log_file, text=True, start_new_session=True
        )
        try:
            stdout, _ = proc.communicate(timeout=wall_limit_s)
            exit_code: Optional[int] = proc.returncode
        except subprocess.TimeoutExpired:
            stdout = stop_process_group(proc)
            exit_code = None
            log_file.write(f"\n[killed at the wall limit of {wall_limit_s:.0f} s]\n")
        log_file.write("--- stdout ---\n" + (stdout or ""))
    wall = time.monotonic() - start
    return EvalRun(exit_code, wall, read_verdict(output_dir, stdout or ""), log)


def stop_process_group(proc: subprocess.Popen) -> str:
    """SIGTERM to the eval's process group (polyprof cancels its workers), SIGKILL if it stays."""
    for sig, wait_s in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            stdout, _ = proc.communicate(timeout=wait_s)
            return stdout or ""
        except subprocess.TimeoutExpired:
            continue
    return ""


def read_verdict(output_dir: Path, stdout: str) -> Optional[Dict[str, Any]]:
    """verdict.json from the eval directory, else the `--json` verdict on stdout."""
    path = output_dir / "verdict.json"
    for text in (path.read_text() if path.is_file() else None, stdout):
        if not text or not text.strip():
            continue
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        if isinstance(doc, dict) and "status" in doc:
            return doc
    return None


def figures(verdict: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The figures the tables print, None where the verdict lacks them."""
    verdict = verdict or {}
    timing = verdict.get("timing") or {}
    witness = verdict.get("witness") or {}
    failure = verdict.get("failure") or {}
    speedup = timing.get("speedup") or {}
    return {
        "status": verdict.get("status"),
        "failure_kind": failure.get("kind"),
        "findings": [f.get("kind") for f in verdict.get("findings") or []],
        "score_ms": timing.get("score_ms"),
        "reference_ms": (timing.get("reference") or {}).get("median_ms"),
        "speedup": speedup.get("value"),
        "witness_ms": witness.get("median_ms"),
        "score_over_witness": witness.get("reported_over_witnessed"),
    }


def ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.4f}"


def ratio(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


class Report:
    """Lines printed and appended to summary.txt as they come (a run cut short keeps them)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        path.write_text("")

    def line(self, text: str = "") -> None:
        print(text, flush=True)
        with open(self.path, "a") as summary:
            summary.write(text + "\n")

    def table(self, header: List[str], rows: List[List[str]]) -> None:
        widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
        for row in [header, *rows]:
            self.line("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())


class Budget:
    """The whole script's wall-clock budget: a later step that would not fit is skipped, and
    said so, rather than the command being killed with nothing written."""

    def __init__(self, seconds: float):
        self.start = time.monotonic()
        self.seconds = seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()


# --- the work pass, as evidence.json records it ---------------------------------------------

#: FlopCounts fields by precision, in the order a split is printed (vector, then tensor).
FLOP_FIELDS = ["fp16", "fp32", "fp64", "tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_fp8",
               "tensor_int8", "tensor_fp64"]


def _range_name(text: str) -> str:
    return text.rsplit("@", 1)[-1].strip()


def _work_totals(work: Dict[str, Any], calls: Optional[List[int]]) -> Dict[str, Any]:
    """DRAM bytes and FLOPs by precision over the launches inside the given calls' ranges
    (`polyprof/call/K`; every launch when `calls` is None), and how many launches that was and
    were outside them."""
    names = None if calls is None else {f"polyprof/call/{k}" for k in calls}
    totals: Dict[str, Any] = {"read": 0.0, "write": 0.0, "launches": 0, "outside": 0,
                              "flops": {f: 0.0 for f in FLOP_FIELDS}}
    for launch in work.get("launches") or []:
        if names is not None and not any(_range_name(r) in names for r in launch.get("ranges") or []):
            totals["outside"] += 1
            continue
        totals["launches"] += 1
        counters = launch.get("counters") or {}
        totals["read"] += counters.get("dram_bytes_read") or 0.0
        totals["write"] += counters.get("dram_bytes_write") or 0.0
        flops = counters.get("flops") or {}
        for name in FLOP_FIELDS:
            value = flops.get(name) or 0.0
            if name == "fp16":
                # HFMA2.MMA constant moves are no FP16 math (FlopCounts::vector_fp16).
                value = max(0.0, value - min(value, flops.get("fp16_hfma2_mma") or 0.0))
            totals["flops"][name] += value
    return totals


def precision_split(flops: Dict[str, float]) -> str:
    """`fp32 97% tensor_tf32 3%` (shares of all FLOPs), or `no flops`."""
    total = sum(flops.values())
    if total <= 0:
        return "no flops"
    parts = [f"{name} {100 * value / total:.0f}%" for name, value in flops.items() if value > 0]
    return " ".join(parts)


def run_seconds(run_dir: Path) -> Optional[float]:
    """How long a worker's profiled run took (its first step's last attempt, run.json), or None."""
    try:
        run = json.loads((run_dir / "run.json").read_text())
        return float(run["steps"][0]["attempts"][-1]["timings"]["end_s"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def work_figures(eval_dir: Path) -> Dict[str, Any]:
    """The work pass of an eval directory per call: DRAM bytes read and written against the
    inputs' and outputs' bytes, the FLOPs' precision split, and the reference's split when its
    work pass was taken. `note` says why a figure is missing."""
    path = eval_dir / "evidence.json"
    try:
        evidence = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return {"note": f"no evidence ({error.__class__.__name__})"}
    work = evidence.get("work")
    if work is None:
        planned = (evidence.get("settings") or {}).get("work_pass")
        return {"note": "no work pass" + ("" if planned is None else f" (planned: {planned})")}
    trials = [t for t in evidence.get("trials") or [] if t.get("phase") == "work"]
    calls = [t["index"] for t in trials]
    figures_: Dict[str, Any] = {"error": work.get("error"), "calls": len(calls),
                                "seconds": run_seconds(eval_dir / (work.get("run_dir") or "work.000"))}
    if trials:
        figures_["input_bytes"] = sum(s.get("nbytes") or 0 for s in trials[0].get("inputs") or [])
        figures_["output_bytes"] = sum(s.get("nbytes") or 0 for s in trials[0].get("reference_outputs") or [])
    totals = _work_totals(work, calls)
    per_call = max(1, len(calls))
    figures_.update(read_bytes=totals["read"] / per_call, write_bytes=totals["write"] / per_call,
                    launches=totals["launches"], outside=totals["outside"],
                    split=precision_split(totals["flops"]))
    if figures_.get("input_bytes"):
        figures_["read_over_input"] = figures_["read_bytes"] / figures_["input_bytes"]
    reference = evidence.get("reference_work")
    if reference is not None:
        # Only the reference's one profiled run is in its profiler's window: every launch counts.
        figures_["reference_split"] = precision_split(_work_totals(reference, None)["flops"])
        figures_["reference_error"] = reference.get("error")
        figures_["reference_seconds"] = run_seconds(eval_dir / (reference.get("run_dir") or "reference-work.000"))
    return figures_


def describe_work(work: Dict[str, Any]) -> str:
    """One line of work figures: `work: read 128.0 of 256.0 MB in (0.50), wrote 0.0 MB (out
    0.0 MB), 2 launches; fp32 100%; ref: fp32 100%`."""
    if "read_bytes" not in work:
        return "work: " + work.get("note", "-")
    mb = 1e6
    text = f"work: read {work['read_bytes'] / mb:.1f}"
    if work.get("input_bytes"):
        text += f" of {work['input_bytes'] / mb:.1f} MB in ({work['read_over_input']:.2f})"
    else:
        text += " MB"
    text += f", wrote {work['write_bytes'] / mb:.1f} MB"
    if work.get("output_bytes") is not None:
        text += f" (out {work['output_bytes'] / mb:.1f} MB)"
    text += f", {work['launches']} launches/{work['calls']} calls"
    if work.get("outside"):
        text += f" (+{work['outside']} outside the calls)"
    if work.get("seconds") is not None:
        text += f", {work['seconds']:.0f} s"
    text += f"; {work['split']}"
    if "reference_split" in work:
        text += f"; ref: {work['reference_split']}"
        if work.get("reference_seconds") is not None:
            text += f" ({work['reference_seconds']:.0f} s)"
        if work.get("reference_error"):
            text += f" (ref error: {str(work['reference_error'])[:80]})"
    if work.get("error"):
        text += f"; error: {str(work['error'])[:120]}"
    return text
