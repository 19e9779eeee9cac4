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
            stdout = _stop(proc)
            exit_code = None
            log_file.write(f"\n[killed at the wall limit of {wall_limit_s:.0f} s]\n")
        log_file.write("--- stdout ---\n" + (stdout or ""))
    wall = time.monotonic() - start
    return EvalRun(exit_code, wall, read_verdict(output_dir, stdout or ""), log)


def _stop(proc: subprocess.Popen) -> str:
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
