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

import json
import os
import shutil
from typing import Any, Callable, Dict, List, Optional

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
    ``witness_tolerance`` (0.9), ``suspicious_speedup`` (10), ``min_plausible_ms`` (0.001),
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
