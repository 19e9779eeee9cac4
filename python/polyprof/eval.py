"""``polyprof.evaluate``: judge a candidate kernel against a reference, as ``polyprof eval``
does (docs/eval-harness.md): correctness on inputs from secret seeds, interleaved timing, a
witness profiler on CUDA. The candidate runs in its own process; nothing it does in there can
change the verdict.

    result = polyprof.evaluate("ref.py", "cand.py", device="cuda")
    if not result.passed:
        for f in result.findings:
            print(f.kind, f.message, f.measured, f.limit)
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import tempfile
import threading
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

from . import _native
from ._eval_sources import problem_files
from ._options import PathLike, supervisor

#: Options of ``evaluate`` and the name the native layer knows them by.
_OPTION_NAMES = {
    "trials": "trials",
    "timing_blocks": "timing_blocks",
    "blocks": "timing_blocks",
    "repeat": "repeat",
    "warmup": "warmup",
    "atol": "atol",
    "rtol": "rtol",
    "flush_l2": "flush_l2",
    "witness_calls": "witness_calls",
    "witness_profiler": "witness_profiler",
    "profiler": "witness_profiler",
    "witness_tolerance": "witness_tolerance",
    "scored_trace": "scored_trace",
    "suspicious_speedup": "suspicious_speedup",
    "min_plausible_ms": "min_plausible_ms",
    "require_candidate_kernels": "require_candidate_kernels",
    "work_pass": "work_pass",
    "work_calls": "work_calls",
    "flops_per_call": "flops_per_call",
    "flops": "flops_per_call",
    "allow_tf32": "allow_tf32",
    "init_seed": "init_seed",
    "seed_init": "init_seed",
    "timeout": "timeout_s",
    "setup_timeout": "setup_timeout_s",
    "python": "python",
}


class Finding:
    """One finding of the audit: ``kind`` (``inputs_modified``, ``suspicious_speedup``, …),
    ``message``, and the figures behind it (``measured`` against ``limit``, in ``unit``)."""

    __slots__ = ("kind", "check", "message", "measured", "limit", "unit", "evidence")

    def __init__(self, data: Dict[str, Any]):
        self.kind: str = data["kind"]
        self.check: str = data.get("check", "")
        self.message: str = data.get("message", "")
        self.measured: Optional[float] = data.get("measured")
        self.limit: Optional[float] = data.get("limit")
        self.unit: Optional[str] = data.get("unit")
        self.evidence: Any = data.get("evidence")

    def __repr__(self) -> str:
        return f"Finding({self.kind!r}, measured={self.measured!r}, limit={self.limit!r})"


class EvalResult:
    """What an eval concluded. ``passed``: correct and no finding. ``status``: ``correct``,
    ``incorrect`` or ``failed``. ``verdict`` is verdict.json as a dict; ``evidence_path`` is
    evidence.json, everything measured. ``harness_failed``: the eval itself could not run (the
    reference broke, no Python): nothing about the candidate was judged."""

    __slots__ = ("passed", "status", "speedup", "findings", "verdict", "dir", "evidence_path", "harness_failed")

    def __init__(self, data: Dict[str, Any]):
        verdict = data["verdict"]
        self.verdict: Dict[str, Any] = verdict
        self.passed: bool = bool(verdict.get("passed"))
        self.status: str = verdict.get("status", "failed")
        timing = verdict.get("timing") or {}
        self.speedup: Optional[float] = (timing.get("speedup") or {}).get("value")
        self.findings: List[Finding] = [Finding(f) for f in verdict.get("findings", [])]
        self.dir: str = data["dir"]
        self.evidence_path: str = data["evidence_path"]
        self.harness_failed: bool = bool(data.get("harness_failed"))

    @property
    def failure(self) -> Optional[Dict[str, Any]]:
        """Why the eval stopped early (stage, kind, message, log), when it did."""
        return self.verdict.get("failure")

    def evidence(self) -> Dict[str, Any]:
        """evidence.json, read from the eval directory."""
        with open(self.evidence_path, encoding="utf-8") as f:
            evidence: Dict[str, Any] = json.load(f)
        return evidence

    def __repr__(self) -> str:
        return f"EvalResult(status={self.status!r}, passed={self.passed}, speedup={self.speedup!r}, findings={[f.kind for f in self.findings]})"


def evaluate(
    reference: Any,
    candidate: Any,
    *,
    device: str = "cuda",
    output_dir: Optional[PathLike] = None,
    get_inputs: Optional[Callable[..., Any]] = None,
    get_init_inputs: Optional[Callable[..., Any]] = None,
    **options: Any,
) -> EvalResult:
    """Evaluate ``candidate`` (a KernelBench-format file with ``ModelNew``) against
    ``reference`` (``Model``, ``get_inputs``, ``get_init_inputs``) on ``device`` (``cuda`` or
    ``cpu``). Without ``output_dir`` the files go to the next free ``polyprof-runs/eval.NNN``;
    a given ``output_dir`` must be empty.

    Either side may instead be a plain callable: a module-level function (called with the
    inputs) or class (built with the init inputs, then called) defined in a file the worker
    process can import; a callable reference needs ``get_inputs`` (and may take
    ``get_init_inputs``), module-level functions too. Each runs in its own process, as a file.

    ``options`` (defaults as ``polyprof eval``): ``trials`` (3), ``timing_blocks`` (5),
    ``repeat`` (50), ``warmup`` (5), ``atol``/``rtol`` (1e-2), ``flush_l2`` (True),
    ``witness_calls`` (3), ``witness_profiler`` (``"ncu"``; ``"none"`` for no witness),
    ``witness_tolerance`` (0.9), ``scored_trace`` (True: the scored pass traced on the GPU and
    judged on its timeline, no separate witness pass), ``suspicious_speedup`` (10), ``min_plausible_ms`` (0.001),
    ``require_candidate_kernels`` (False), ``work_pass`` (True: a correct candidate's calls
    profiled with work counters on CUDA), ``work_calls`` (1), ``flops_per_call`` (or ``flops``:
    the FLOPs one call must do, for the FLOP floor), ``allow_tf32`` (False), ``init_seed``
    (random), ``timeout`` (120 s per call),
    ``setup_timeout`` (600 s), ``python`` (``$POLYPROF_PYTHON`` or ``python3``).

    A candidate that fails is *returned* (``status == "failed"``, ``failure``); unreadable
    files or a non-empty ``output_dir`` raise (``OSError``, ``ValueError``)."""
    doc: Dict[str, Any] = {}
    for key, value in options.items():
        name = _OPTION_NAMES.get(key)
        if name is None:
            raise TypeError(f"evaluate() got an unexpected option {key!r} (valid: {', '.join(sorted(_OPTION_NAMES))})")
        if value is None:
            continue
        doc[name] = os.fspath(value) if name == "python" else value
    exe = supervisor()
    if exe is not None:
        doc["supervisor"] = exe
    reference, candidate, sources = problem_files(reference, candidate, get_inputs, get_init_inputs)
    try:
        text = _native.evaluate_json(
            os.fspath(reference),
            os.fspath(candidate),
            device,
            None if output_dir is None else os.fspath(output_dir),
            json.dumps(doc),
        )
    finally:
        if sources is not None:
            shutil.rmtree(sources, ignore_errors=True)
    return EvalResult(json.loads(text))


#: ``Evaluator`` options and their ``polyprof eval`` flags (value options).
_FLAG_OPTIONS = {
    "trials": "--trials",
    "timing_blocks": "--blocks",
    "blocks": "--blocks",
    "repeat": "--repeat",
    "warmup": "--warmup",
    "atol": "--atol",
    "rtol": "--rtol",
    "witness_calls": "--witness-calls",
    "witness_profiler": "--profiler",
    "profiler": "--profiler",
    "witness_tolerance": "--witness-tolerance",
    "suspicious_speedup": "--suspicious-speedup",
    "min_plausible_ms": "--min-plausible-ms",
    "work_calls": "--work-calls",
    "flops_per_call": "--flops",
    "flops": "--flops",
    "init_seed": "--seed-init",
    "seed_init": "--seed-init",
    "timeout": "--timeout",
    "setup_timeout": "--setup-timeout",
    "python": "--python",
    "sandbox": "--sandbox",
    "build_jobs": "--build-jobs",
}

#: Boolean options: the flag is given when the value is the one named.
_SWITCH_OPTIONS = {
    "flush_l2": ("--no-flush-l2", False),
    "work_pass": ("--no-work-pass", False),
    "scored_trace": ("--scored-trace=off", False),
    "require_candidate_kernels": ("--require-candidate-kernels", True),
    "allow_tf32": ("--allow-tf32", True),
}


def _executable() -> str:
    """The polyprof executable: ``$POLYPROF_EXECUTABLE``, the one shipped in the wheel, else
    ``polyprof-native`` or ``polyprof`` on PATH."""
    from pathlib import Path

    given = os.environ.get("POLYPROF_EXECUTABLE")
    if given:
        return given
    bundled = Path(__file__).with_name("bin") / "polyprof"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    for name in ("polyprof-native", "polyprof"):
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("the polyprof executable is not in this installation (build the wheel with python/build-wheel.sh, or set POLYPROF_EXECUTABLE)")


def _argv(reference: PathLike, device: str, output_dir: Optional[str], cold: bool, options: Dict[str, Any]) -> List[str]:
    argv = [_executable(), "eval", "--reference", os.fspath(reference), "--candidate", "-", "--device", device]
    if output_dir is not None:
        argv += ["--output-dir", output_dir]
    if cold:
        argv.append("--cold")
    for key, value in options.items():
        if value is None:
            continue
        if key in _FLAG_OPTIONS:
            argv += [_FLAG_OPTIONS[key], str(value)]
        elif key in _SWITCH_OPTIONS:
            flag, when = _SWITCH_OPTIONS[key]
            if bool(value) == when:
                argv.append(flag)
        else:
            valid = ", ".join(sorted([*_FLAG_OPTIONS, *_SWITCH_OPTIONS]))
            raise TypeError(f"Evaluator() got an unexpected option {key!r} (valid: {valid})")
    return argv


class Judged:
    """One candidate's verdict from an ``Evaluator``, shaped for a reward: ``passed`` (correct
    and no finding), ``status`` (``correct``, ``incorrect``, ``failed``, or ``not_run`` when
    its eval could not begin), ``speedup`` with its 95 % interval (``speedup_low``,
    ``speedup_high``; ``None`` when it was not timed), ``findings`` (their kinds), ``failure``
    (``raised``, ``timeout``, … or why it could not run), ``dir`` (its eval directory, with
    evidence.json and verdict.json), ``device_seconds`` (the wall seconds its judged turn held the
    device: GPU seconds on ``cuda``; 0 for a candidate whose build failed) and ``reference_reused`` (its reference timing blocks were
    the warm evaluator's stored ones, after their drift probe)."""

    __slots__ = (
        "candidate",
        "passed",
        "status",
        "speedup",
        "speedup_low",
        "speedup_high",
        "score_ms",
        "findings",
        "failure",
        "dir",
        "device_seconds",
        "reference_reused",
    )

    def __init__(self, data: Dict[str, Any]):
        row: Dict[str, Any] = data["row"]
        speedup: Dict[str, Any] = row.get("speedup") or {}
        self.candidate: str = row["candidate"]
        self.passed: bool = bool(row.get("passed"))
        self.status: str = row.get("status", "failed")
        self.speedup: Optional[float] = speedup.get("value")
        self.speedup_low: Optional[float] = speedup.get("ci_low")
        self.speedup_high: Optional[float] = speedup.get("ci_high")
        self.score_ms: Optional[float] = row.get("score_ms")
        self.findings: List[str] = list(row.get("findings", []))
        self.failure: Optional[str] = row.get("failure")
        self.dir: str = row["dir"]
        # The judged turn's seconds (0 for a failed build: it never reached the device); older
        # executables gave only the whole eval's.
        self.device_seconds: float = float(data.get("device_seconds", data.get("seconds", 0.0)))
        self.reference_reused: bool = bool(data.get("reference_reused"))

    def reward(self, failed: float = 0.0) -> float:
        """The speedup of a candidate that passed, else ``failed``: the usual RL reward."""
        return self.speedup if self.passed and self.speedup is not None else failed

    def verdict(self) -> Dict[str, Any]:
        """verdict.json, read from the eval directory."""
        with open(os.path.join(self.dir, "verdict.json"), encoding="utf-8") as f:
            verdict: Dict[str, Any] = json.load(f)
        return verdict

    def evidence(self) -> Dict[str, Any]:
        """evidence.json, read from the eval directory."""
        with open(os.path.join(self.dir, "evidence.json"), encoding="utf-8") as f:
            evidence: Dict[str, Any] = json.load(f)
        return evidence

    def __repr__(self) -> str:
        return f"Judged({self.candidate!r}, status={self.status!r}, passed={self.passed}, speedup={self.speedup!r}, findings={self.findings})"


class _Lane:
    """One ``polyprof eval --candidate -`` process: a warm evaluator judging one candidate at
    a time, candidate paths in on its stdin, one JSON line out per verdict, as each is judged.
    Paths are written as soon as they are submitted, so the process builds later candidates on
    the CPU while earlier ones are judged, and judges them as their builds finish
    (docs/eval-harness.md, "The build stage"); a reader thread hands each line to the future of
    the candidate it names by its ``index`` (the order it was submitted in)."""

    def __init__(self, argv: List[str]):
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        self._lock = threading.Lock()
        self._waiting: "Dict[int, concurrent.futures.Future[Judged]]" = {}
        self._submitted = 0
        self._reader = threading.Thread(target=self._read, name="polyprof-evaluator-lane", daemon=True)
        self._reader.start()

    def outstanding(self) -> int:
        """Candidates submitted and not yet judged."""
        with self._lock:
            return len(self._waiting)

    def submit(self, candidate: PathLike) -> "concurrent.futures.Future[Judged]":
        path = os.path.abspath(os.fspath(candidate))
        if "\n" in path:
            raise ValueError(f"a candidate path holds a newline: {path!r}")
        future: "concurrent.futures.Future[Judged]" = concurrent.futures.Future()
        with self._lock:
            stdin = self._process.stdin
            if stdin is None or stdin.closed:
                raise RuntimeError("the evaluator is closed")
            if self._process.poll() is not None:
                future.set_exception(self._ended())
                return future
            self._waiting[self._submitted] = future
            self._submitted += 1
            try:
                stdin.write(path.encode() + b"\n")
                stdin.flush()
            except BrokenPipeError:
                pass  # the reader fails what waits, with the process's own words
        return future

    def judge(self, candidate: PathLike) -> Judged:
        return self.submit(candidate).result()

    def _read(self) -> None:
        stdout = self._process.stdout
        while stdout is not None:
            try:
                line = stdout.readline()
            except (OSError, ValueError):
                line = b""
            if not line:
                break
            try:
                data: Any = json.loads(line)
            except ValueError as e:
                data = e
            index = data.get("index") if isinstance(data, dict) else None
            with self._lock:
                # A line that names no waiting candidate (an unreadable one) goes to the oldest.
                if index not in self._waiting:
                    index = min(self._waiting, default=None)
                future = self._waiting.pop(index) if index is not None else None
            if future is None:
                continue
            try:
                if isinstance(data, Exception):
                    raise data
                future.set_result(Judged(data))
            except Exception as e:  # a line that is not a verdict: its candidate's error
                future.set_exception(RuntimeError(f"the evaluator printed an unreadable line: {e}"))
        with self._lock:
            left, self._waiting = list(self._waiting.values()), {}
        for future in left:
            future.set_exception(self._ended())

    def _ended(self) -> RuntimeError:
        return RuntimeError(f"the evaluator's polyprof process ended (status {self._process.wait()}): {self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-4000:].strip()

    def close(self) -> None:
        with self._lock:
            if self._process.stdin is not None and not self._process.stdin.closed:
                try:
                    self._process.stdin.close()
                except BrokenPipeError:
                    pass
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.terminate()
            self._process.wait()
        self._reader.join(timeout=60)
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()


class Evaluator:
    """A warm evaluator (docs/eval-harness.md, "The warm evaluator"), opened once per problem
    and device: the reference is set up once and its timing blocks measured once (re-checked by
    a drift probe before reuse), while every candidate still runs in fresh, sandboxed worker
    processes and gets the verdict a cold ``polyprof.evaluate`` would give it.

        with polyprof.Evaluator("ref.py", device="cuda") as ev:
            for judged in ev.evaluate_many(paths):
                rewards[judged.candidate] = judged.reward()

    ``lanes`` warm evaluators run side by side (each judges one candidate at a time; on one GPU
    keep 1: timings taken side by side disturb each other). ``cold=True`` judges every
    candidate cold (for comparison). ``options`` as ``evaluate``'s, plus ``sandbox``
    (``"on"``/``"off"``) and ``build_jobs`` (candidates' builds run ahead on the CPU this many
    at a time, default the CPU count; 0: each right before its turn). Candidates are files (``ModelNew``); an ``output_dir`` gets one folder
    per lane (``lane-N``), each with one folder per candidate."""

    def __init__(
        self,
        reference: PathLike,
        *,
        device: str = "cuda",
        output_dir: Optional[PathLike] = None,
        lanes: int = 1,
        cold: bool = False,
        **options: Any,
    ):
        if lanes < 1:
            raise ValueError(f"lanes must be at least 1, not {lanes}")
        if not os.path.isfile(os.fspath(reference)):
            raise FileNotFoundError(f"the reference {os.fspath(reference)!r} is not a file")
        self._lanes: List[_Lane] = []
        reference = os.path.abspath(os.fspath(reference))
        for n in range(lanes):
            out = None if output_dir is None else os.path.join(os.fspath(output_dir), f"lane-{n}")
            self._lanes.append(_Lane(_argv(reference, device, out, cold, options)))
        self._choose = threading.Lock()

    def evaluate(self, candidate: PathLike) -> Judged:
        """Judge one candidate (blocks until its verdict; a failing candidate is returned)."""
        return self.submit(candidate).result()

    def submit(self, candidate: PathLike) -> "concurrent.futures.Future[Judged]":
        """Send ``candidate`` to the lane with the fewest waiting now (its build starts there at
        once, its judged turn after theirs); its verdict arrives in the future."""
        with self._choose:
            if not self._lanes:
                raise RuntimeError("the evaluator is closed")
            lane = min(self._lanes, key=lambda lane: lane.outstanding())
            return lane.submit(candidate)

    def evaluate_many(self, candidates: Iterable[PathLike]) -> Iterator[Judged]:
        """Judge every candidate, yielding each verdict as it finishes (not in the order given:
        a lane judges its candidates as their builds finish, and lanes run side by side). All
        are sent at once: their builds run ahead of their turns."""
        futures = [self.submit(c) for c in candidates]
        for done in concurrent.futures.as_completed(futures):
            yield done.result()

    async def evaluate_async(self, candidate: PathLike) -> Judged:
        """``evaluate`` for asyncio: awaits the verdict without blocking the event loop."""
        import asyncio

        return await asyncio.wrap_future(self.submit(candidate))

    def close(self) -> None:
        """End every lane's trusted worker and process (after the verdicts still due)."""
        with self._choose:
            lanes, self._lanes = self._lanes, []
        for lane in lanes:
            lane.close()

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
