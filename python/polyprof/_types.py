"""Typed views of polyprof's documents (run results, profile runs, diffs).

Each object wraps the JSON document the Rust library produced: documented fields are attributes
(``None`` when the document leaves them out), nested documents are objects too, and
``to_dict()`` returns the document itself, so nothing polyprof recorded is ever lost, including
fields newer than this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

__all__ = [
    "Document",
    "Outcome",
    "StreamCapture",
    "Timings",
    "MarkerSeen",
    "RunResult",
    "KernelRecord",
    "StepRun",
    "RunError",
    "ProfileRun",
    "DiffSide",
    "KernelChange",
    "UnmatchedKernel",
    "RunDiff",
]


class Document:
    """A polyprof document with attribute access; ``to_dict()`` gives the JSON object."""

    #: field name -> Document subclass (or a one-element list of one, for arrays)
    _nested: Dict[str, Any] = {}

    __slots__ = ("_data", "_cache")
    _data: Dict[str, Any]
    _cache: Dict[str, Any]

    def __init__(self, data: Dict[str, Any]):
        if not isinstance(data, dict):
            raise TypeError(f"{type(self).__name__} expects a JSON object, got {type(data).__name__}")
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_cache", {})

    # Hidden from type checkers: they see only the fields each class annotates, so a misspelt
    # attribute is a type error (`mypy --strict`); at run time every field of the document reads.
    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            return self._field(name)

    def _field(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        cache = self._cache
        if name in cache:
            return cache[name]
        known = name in self._data or name in _annotations(type(self))
        if not known:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        value = self._data.get(name)
        kind = self._nested.get(name)
        if value is None and (
            isinstance(kind, list) or str(_annotations(type(self)).get(name, "")).startswith("List[")
        ):
            # A list field the document leaves out is empty (``errors`` of a clean run), as
            # its annotation says: never ``None``.
            value = []
        elif value is not None and kind is not None:
            if isinstance(kind, list):
                value = [kind[0](v) for v in value]
            elif isinstance(kind, dict):
                value = {k: kind["*"](v) for k, v in value.items()}
            else:
                value = kind(value)
        cache[name] = value
        return value

    def __dir__(self) -> List[str]:
        """The fields (annotated and in the document) too, for tab completion."""
        fields = set(_annotations(type(self))) | set(self._data)
        return sorted(set(object.__dir__(self)) | {f for f in fields if not f.startswith("_")})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only; use to_dict() for a copy")

    def to_dict(self) -> Dict[str, Any]:
        """The document as a JSON-compatible dict (a deep copy)."""
        import copy

        return copy.deepcopy(self._data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Document) and type(other) is type(self) and other._data == self._data

    def __repr__(self) -> str:
        shown = {k: self._data[k] for k in list(self._data)[:4]}
        return f"{type(self).__name__}({shown!r}{', …' if len(self._data) > 4 else ''})"


def _annotations(cls: type) -> Dict[str, Any]:
    found: Dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        found.update(klass.__dict__.get("__annotations__", {}))
    return found


class Outcome(Document):
    """How a run ended: ``kind`` is ``exited``, ``signalled``, ``timed_out``, ``inactive``,
    ``hung_after_marker``, ``cancelled`` or ``spawn_failed`` (more may come)."""

    kind: str
    code: Optional[int]
    signal: Optional[int]
    after_s: Optional[float]
    marker_line: Optional[str]
    passed: Optional[bool]
    error: Optional[str]

    @property
    def success(self) -> bool:
        """Exit 0, or a passing end marker followed by a hang that polyprof stopped."""
        kind = self._data.get("kind")
        return (kind == "exited" and self._data.get("code") == 0) or (
            kind == "hung_after_marker" and bool(self._data.get("passed"))
        )

    def __str__(self) -> str:
        d = self._data
        kind = d.get("kind")
        if kind == "exited":
            return f"exited with code {d.get('code')}"
        if kind == "signalled":
            return f"killed by signal {d.get('signal')}"
        if kind == "supervisor_killed":
            return f"its supervising process was killed by signal {d.get('signal')}"
        if kind in ("timed_out", "inactive"):
            return f"{kind.replace('_', ' ')} after {d.get('after_s')} s"
        return str(kind)


class StreamCapture(Document):
    log_path: Optional[str]
    total_bytes: int
    lines: int
    head: List[str]
    tail: List[str]
    long_lines_split: bool
    log_truncated: bool
    lines_omitted: int

    @property
    def text(self) -> str:
        """The kept lines (head, then tail), one per line."""
        lines = list(self._data.get("head") or [])
        omitted = self._data.get("lines_omitted") or 0
        if omitted:
            lines.append(f"… {omitted} lines omitted …")
        lines.extend(self._data.get("tail") or [])
        return "\n".join(lines)


class Timings(Document):
    spawn_s: float
    first_output_s: Optional[float]
    marker_s: Optional[float]
    exit_s: Optional[float]
    end_s: float


class MarkerSeen(Document):
    line: str
    passed: bool
    at_s: float


class RunResult(Document):
    """The result of one supervised run (``polyprof.run``)."""

    _nested = {
        "outcome": Outcome,
        "marker": MarkerSeen,
        "timings": Timings,
        "stdout": StreamCapture,
        "stderr": StreamCapture,
    }

    argv: List[str]
    outcome: Outcome
    pid: Optional[int]
    marker: Optional[MarkerSeen]
    timings: Timings
    leaked: bool
    stdout: StreamCapture
    stderr: StreamCapture
    warnings: List[str]

    @property
    def returncode(self) -> Optional[int]:
        """The exit status as ``subprocess`` gives it: the code, or ``-signal``; ``None`` when
        the process never ran to an exit (timeout, marker hang, cancel, spawn failure)."""
        out = self._data.get("outcome") or {}
        if out.get("kind") == "exited":
            return out.get("code")
        if out.get("kind") == "signalled":
            return -int(out.get("signal") or 0)
        return None

    @property
    def success(self) -> bool:
        return self.outcome.success


class KernelRecord(Document):
    """One kernel launch (or an aggregate of ``calls`` launches) in base units: ns, bytes, %."""

    name: str
    short_name: Optional[str]
    profiler: Optional[str]
    launch_id: Optional[int]
    calls: Optional[int]
    process_id: Optional[int]
    process_name: Optional[str]
    device: Optional[str]
    stream: Optional[str]
    grid: Optional[List[int]]
    block: Optional[List[int]]
    start_ns: Optional[float]
    duration_ns: Optional[float]
    dram_bytes: Optional[float]
    dram_bytes_read: Optional[float]
    dram_bytes_write: Optional[float]
    sm_throughput_pct: Optional[float]
    memory_throughput_pct: Optional[float]
    achieved_occupancy_pct: Optional[float]
    theoretical_occupancy_pct: Optional[float]
    registers_per_thread: Optional[int]
    shared_mem_per_block: Optional[int]
    flops: Optional[Dict[str, float]]
    metrics: Optional[Dict[str, Dict[str, Any]]]
    call_path: Optional[List[Any]]
    #: With the profile cache: ``source`` (``profiled``, ``repeat``, ``cache``), ``key``, ``origin_run``.
    cache: Optional[Dict[str, Any]]

    @property
    def total_flops(self) -> Optional[float]:
        flops = self._data.get("flops") or {}
        values = [v for v in flops.values() if isinstance(v, (int, float))]
        return sum(values) if values else None

    def metric(self, name: str) -> Optional[float]:
        """A raw profiler metric's value by name (``None`` when absent)."""
        entry = (self._data.get("metrics") or {}).get(name)
        return None if entry is None else entry.get("value")


class StepRun(Document):
    name: str
    accepted: bool
    attempts: List[Dict[str, Any]]
    rejection: Optional[str]

    @property
    def results(self) -> List[RunResult]:
        return [RunResult(a) for a in self._data.get("attempts") or []]


class RunError(Document):
    """One error of a run: ``kind`` says who failed (``profiler_unavailable``, ``spawn``,
    ``timeout``, ``step_rejected``, ``profiler_output``, ``diagnostic``, ``io``, ``internal``,
    ``container``, ``usage``, …; ``unknown`` for a schema_version 1 document), ``message`` what
    to do. ``str(error)`` is the message."""

    kind: str
    message: str

    def __init__(self, data: Any):
        # schema_version 1 documents held plain strings.
        if isinstance(data, str):
            data = {"kind": "unknown", "message": data}
        super().__init__(data)

    def __str__(self) -> str:
        return str(self._data.get("message", ""))


class ProfileRun(Document):
    """A profiler pass end to end: plan, steps, outcome, raw artifacts, kernels (``run.json``)."""

    _nested = {"outcome": Outcome, "kernels": [KernelRecord], "steps": [StepRun], "errors": [RunError]}

    schema_version: int
    polyprof_version: str
    label: str
    started_unix_s: float
    target: List[str]
    env_policy: str
    profiler: Dict[str, Any]
    device: Optional[Dict[str, Any]]
    plan: Optional[Dict[str, Any]]
    steps: List[StepRun]
    outcome: Optional[Outcome]
    output_dir: str
    artifacts: List[Dict[str, Any]]
    kernels: List[KernelRecord]
    diagnostics: List[Dict[str, Any]]
    warnings: List[str]
    errors: List[RunError]
    #: With ``profile_cache``: launches, fingerprints, profiled, hits, repeats, audited,
    #: disagreements, audit_noise (the run's relative noise), saved_s, fingerprint_s,
    #: bypassed (why the cache stepped aside).
    profile_cache: Optional[Dict[str, Any]]

    @property
    def succeeded(self) -> bool:
        """The main step succeeded and nothing was recorded as an error."""
        outcome = self._data.get("outcome")
        return not self._data.get("errors") and outcome is not None and Outcome(outcome).success

    def to_dataframe(self) -> Any:
        """The kernel records as a pandas DataFrame (one row per record; needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_dataframe() needs pandas: pip install pandas") from e
        rows = []
        for k in self._data.get("kernels") or []:
            row = {key: value for key, value in k.items() if key not in ("metrics", "flops", "call_path")}
            for precision, value in (k.get("flops") or {}).items():
                row[f"flops_{precision}"] = value
            for metric, entry in (k.get("metrics") or {}).items():
                row[metric] = entry.get("value")
            rows.append(row)
        return pd.DataFrame(rows)

    def report(self, format: str = "table", device: Optional[str] = None) -> str:
        """The run rendered as ``polyprof report`` does (``table``, ``json``, ``csv``,
        ``hatchet``, ``chrome``)."""
        from . import report as _report

        return _report(self, format=format, device=device)


class DiffSide(Document):
    """One kernel's launches in one run of a diff; times in ns, rates in GFLOP/s and GB/s."""

    #: Launches with a GPU time.
    count: int
    #: Median GPU time over the launches.
    gpu_time_ns: Optional[float]
    min_ns: Optional[float]
    p90_ns: Optional[float]
    iqr_ns: Optional[float]
    #: Sum over the launches.
    total_ns: float
    gflops_per_s: Optional[float]
    gb_per_s: Optional[float]


class KernelChange(Document):
    """One kernel (name and launch configuration) matched in both runs of a diff."""

    _nested = {"a": DiffSide, "b": DiffSide}

    name: str
    short_name: str
    grid: Optional[List[int]]
    block: Optional[List[int]]
    a: DiffSide
    b: DiffSide
    #: (median B - median A) / median A x 100; positive is slower.
    gpu_time_change_pct: Optional[float]
    #: median B - median A, ns.
    gpu_time_change_ns: Optional[float]
    #: Whether the launches' spread check applied and passed.
    significant: Optional[bool]
    gflops_change_pct: Optional[float]
    gbps_change_pct: Optional[float]
    #: ``regressed``, ``improved``, ``unchanged``, ``noise`` or ``no_time``.
    change: str


class UnmatchedKernel(Document):
    """A kernel in one run of a diff only."""

    _nested = {"side": DiffSide}

    name: str
    short_name: str
    grid: Optional[List[int]]
    block: Optional[List[int]]
    side: DiffSide


class RunDiff(Document):
    """``polyprof diff``'s comparison; ``regressed`` is the CI verdict."""

    _nested = {"kernels": [KernelChange], "only_in_a": [UnmatchedKernel], "only_in_b": [UnmatchedKernel]}

    #: The runs compared (their paths and labels).
    a: str
    b: str
    #: The limits: percent of A's median, and the absolute floor and minimum duration in ns.
    threshold_pct: float
    floor_ns: float
    min_duration_ns: float
    #: GPU time of every kernel launch per run, ns, and its change in percent.
    gpu_time_a_ns: float
    gpu_time_b_ns: float
    gpu_time_change_pct: Optional[float]
    kernels: List[KernelChange]
    only_in_a: List[UnmatchedKernel]
    only_in_b: List[UnmatchedKernel]
    #: Kernels left out by ``min_duration_ns``.
    filtered: int
    regressions: int
    improvements: int

    __slots__ = ("regressed", "text")
    #: Whether a kernel (or a process step) regressed beyond the limits: the CI verdict.
    regressed: bool
    #: The comparison as ``polyprof diff`` prints it.
    text: str

    def __init__(self, data: Dict[str, Any], regressed: bool = False, text: str = ""):
        super().__init__(data)
        object.__setattr__(self, "regressed", regressed)
        object.__setattr__(self, "text", text)

    def __str__(self) -> str:
        return self.text

