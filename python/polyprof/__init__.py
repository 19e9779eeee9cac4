"""polyprof: run any command under the right GPU profiler, supervised, and read one normalized
profile.

    import polyprof
    result = polyprof.run(["python3", "-m", "pytest", "-q"], end_marker="pytest", timeout=600)
    run = polyprof.profile(["./app", "1"], profiler="ncu", output_dir="runs/ncu.000")
    for k in run.kernels:
        print(k.short_name, k.duration_ns)
    verdict = polyprof.diff("baseline/ncu.000", "candidate/ncu.000", threshold=5)

Errors: usage errors raise ``ValueError``; a profiler that cannot run here raises
``ProfilerUnavailable`` where the call needs it (``get_profilers(...)[i](dir).read_output()``);
a run that fails is *returned* (``run.errors``, ``run.outcome``), never raised.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:
    # Only type checkers read it (the annotations are strings at run time): no runtime
    # dependency on typing_extensions for Python < 3.12.
    from typing_extensions import Unpack

from . import _native
from ._native import PolyprofError, ProfilerOutputMissing, ProfilerUnavailable
from ._options import EndMarkerArg, PathLike, ProfileOptions, argv_list, run_options, split
from ._types import (
    DiffSide,
    KernelChange,
    KernelRecord,
    Outcome,
    ProfileRun,
    RunDiff,
    RunError,
    RunResult,
    StreamCapture,
    UnmatchedKernel,
)
from .batch import BatchEntry, BatchIndex, batch
from .benchmark import KernelBenchmark, benchmark_kernel
from .eval import EvalResult, Evaluator, Finding, Judged, evaluate
from .profiler_command import Profiler, get_profilers
from .session import (
    ProfileSession,
    profile_session,
    record_function,
    register_kernel_hook,
    scope,
    unregister_kernel_hook,
)

__version__: str = _native.__version__

__all__ = [
    "run",
    "run_async",
    "profile",
    "profile_all",
    "batch",
    "BatchIndex",
    "BatchEntry",
    "get_profilers",
    "Profiler",
    "load",
    "diff",
    "report",
    "profile_session",
    "ProfileSession",
    "scope",
    "record_function",
    "register_kernel_hook",
    "unregister_kernel_hook",
    "benchmark_kernel",
    "KernelBenchmark",
    "evaluate",
    "Evaluator",
    "Judged",
    "EvalResult",
    "Finding",
    "RunResult",
    "ProfileRun",
    "RunError",
    "KernelRecord",
    "Outcome",
    "StreamCapture",
    "RunDiff",
    "KernelChange",
    "DiffSide",
    "UnmatchedKernel",
    "PolyprofError",
    "ProfilerUnavailable",
    "ProfilerOutputMissing",
    "ProfileOptions",
]


def _run_options_of(arguments: Dict[str, Any]) -> str:
    """The runner's options JSON from the keyword arguments of ``run`` / ``run_async``."""
    return run_options(**{k: v for k, v in arguments.items() if k != "argv"})


def run(
    argv: Sequence[str],
    *,
    end_marker: EndMarkerArg = None,
    timeout: Optional[float] = None,
    inactivity_timeout: Optional[float] = None,
    marker_grace: Optional[float] = None,
    kill_grace: Optional[float] = None,
    env_policy: str = "inherit",
    allow_env: Sequence[str] = (),
    env: Optional[Dict[str, str]] = None,
    cwd: Optional[PathLike] = None,
    log_dir: Optional[PathLike] = None,
    log_name: Optional[str] = None,
) -> RunResult:
    """Run ``argv`` supervised: its own process group, both streams drained, the end marker
    watched (``"pytest"`` for pytest's summary), SIGTERM → grace → SIGKILL to the group on a
    timeout, every captured byte kept. The GIL is released while it runs; Ctrl-C stops the
    process group and raises ``KeyboardInterrupt``.

    Parameters (times in seconds, ``None`` for no limit): ``argv`` the command as a list (never
    a shell string); ``end_marker`` ``"pytest"``, ``"literal:TEXT"``, ``"regex:RE"`` or plain text;
    ``timeout`` the overall limit; ``inactivity_timeout`` the longest silence on both streams;
    ``marker_grace`` how long the process may take to exit after the end marker; ``kill_grace``
    SIGTERM to SIGKILL; ``env_policy`` ``inherit``, ``clean`` or ``untrusted`` (what the command
    sees of this process's environment), ``allow_env`` names (``NAME*`` a prefix) passed anyway;
    ``env`` variables to set; ``cwd`` the working directory; ``log_dir`` / ``log_name`` where the
    full stdout and stderr logs go.

    Returns a ``RunResult``: ``outcome`` (``kind``, ``code``, ``signal``, ``after_s``),
    ``returncode`` (as ``subprocess``), ``success``, ``timings`` (s since spawn), ``stdout`` and
    ``stderr`` (head and tail lines, byte counts, log paths), ``leaked``, ``warnings``. A command
    that fails is returned, not raised; bad arguments raise ``ValueError``."""
    options = _run_options_of(locals())
    return RunResult(json.loads(_native.run_json(argv_list(argv), options)))


async def run_async(
    argv: Sequence[str],
    *,
    end_marker: EndMarkerArg = None,
    timeout: Optional[float] = None,
    inactivity_timeout: Optional[float] = None,
    marker_grace: Optional[float] = None,
    kill_grace: Optional[float] = None,
    env_policy: str = "inherit",
    allow_env: Sequence[str] = (),
    env: Optional[Dict[str, str]] = None,
    cwd: Optional[PathLike] = None,
    log_dir: Optional[PathLike] = None,
    log_name: Optional[str] = None,
) -> RunResult:
    """``run`` as a coroutine; the event loop keeps running. Cancelling the task stops the
    process group."""
    options = _run_options_of(locals())
    text = await _native.run_json_async(argv_list(argv), options)
    return RunResult(json.loads(text))


def _graces_of(profiler: str, output_dir: PathLike) -> Callable[[], Tuple[float, float]]:
    return lambda: _native.NativeProfiler(profiler, os.fspath(output_dir)).graces()


def profile(
    argv: Sequence[str],
    *,
    profiler: str = "none",
    output_dir: Optional[PathLike] = None,
    call_path: Sequence[str] = (),
    if_exists: str = "refuse",
    profile_cache: Union[None, bool, PathLike, Dict[str, Any]] = None,
    **options: Unpack[ProfileOptions],
) -> ProfileRun:
    """One profiler pass over ``argv`` into ``output_dir`` (``run.json`` is written there).

    An ``output_dir`` that already holds a run raises ``FileExistsError``, as ``polyprof run``
    refuses it; ``if_exists="overwrite"`` removes the old run's files first (``--force``),
    ``if_exists="number"`` writes to the next free ``<output_dir>.NNN`` beside it (the run's
    ``output_dir`` says which). Without ``output_dir``, as without ``--output-dir``: the next
    free ``polyprof-runs/<profiler>.NNN``.

    ``options``: ``timeout``, ``inactivity_timeout``, ``env_policy``, ``allow_env``, ``env``,
    ``cwd`` (the runner); ``end_marker``, ``marker_grace``, ``kill_grace`` (override the
    profiler's); ``ncu`` (a dict of Nsight Compute options, as in run.json's plan),
    ``metric_group``, ``extra_args``. A run that fails is returned with its ``errors``.
    Inside ``profile_session()``, the run's kernels join the session's call paths.

    ``profile_cache`` (ncu): ``True`` for the user's profile cache, a path for another, or a dict
    (``dir``, ``scope``, ``per_fingerprint``, ``audit_share``): each kernel fingerprint is
    profiled once and repeats are served from the cache (``polyprof run --profile-cache``); the
    run's ``profile_cache`` gives the figures, or why the cache stepped aside.

    Returns a ``ProfileRun`` (``run.json``): ``outcome``, ``steps``, ``kernels`` (each a
    ``KernelRecord`` in base units: ``duration_ns``, ``dram_bytes``, ``flops`` per precision,
    percentages as 0-100), ``errors`` (typed: ``kind`` and ``message``), ``warnings``,
    ``output_dir``. An unknown profiler raises ``ValueError``. A profiler that cannot run here
    does not raise: as ``polyprof run`` records it, the run comes back with ``ok`` false and an
    error of kind ``profiler_unavailable`` in ``errors`` (its message names the fix), so a
    pipeline keeps the run directory and what was captured; check ``run.succeeded``."""
    if output_dir is None:
        output_dir, if_exists = os.path.join("polyprof-runs", f"{profiler}.000"), "number"
    settings_json, options_json = split(options, _graces_of(profiler, output_dir))
    text = _native.profile_json(
        argv_list(argv),
        profiler,
        os.fspath(output_dir),
        settings_json,
        options_json,
        list(call_path),
        if_exists,
        _profile_cache_json(profile_cache),
    )
    from .session import _add_run_to_active

    _add_run_to_active(text)
    return ProfileRun(json.loads(text))


def _profile_cache_json(value: Union[None, bool, PathLike, Dict[str, Any]]) -> Optional[str]:
    """The ``ProfileCacheOptions`` JSON of ``profile``'s ``profile_cache`` argument."""
    if value is None or isinstance(value, bool):
        return "{}" if value else None
    if isinstance(value, dict):
        return json.dumps(value)
    return json.dumps({"dir": os.fspath(value)})


def profile_all(
    language: str,
    arch: str,
    argv: Sequence[str],
    *,
    profiler_type: Optional[str] = None,
    output_root: PathLike = "polyprof-runs",
    **options: Unpack[ProfileOptions],
) -> Dict[str, ProfileRun]:
    """Every pass selection gives for ``language`` × ``arch`` (× ``profiler_type``), one after
    the other, each in ``<output_root>/<profiler>.<NNN>``; returns ``{label: run}``, a
    ``ProfileRun`` per pass labelled ``<profiler>`` or ``<profiler>:<metric group>``.
    ``options`` as for ``profile``. An unknown language or arch raises ``ValueError``."""
    settings_json, options_json = split(options, lambda: (10.0, 2.0))
    overrides = settings_json if settings_json != "{}" else None
    text = _native.profile_all_json(
        language,
        arch,
        argv_list(argv),
        os.fspath(output_root),
        profiler_type,
        overrides,
        options_json,
    )
    from .session import _add_run_to_active

    runs = json.loads(text)
    for doc in runs.values():
        _add_run_to_active(json.dumps(doc))
    return {label: ProfileRun(doc) for label, doc in runs.items()}


RunLike = Union[ProfileRun, PathLike]


def _run_json(run: RunLike) -> str:
    if isinstance(run, ProfileRun):
        return json.dumps(run.to_dict())
    return _native.load_json(os.fspath(run))


def load(run_dir: PathLike) -> ProfileRun:
    """Read a run directory (or its ``run.json``)."""
    return ProfileRun(json.loads(_native.load_json(os.fspath(run_dir))))


def diff(
    a: RunLike,
    b: RunLike,
    *,
    threshold: float = 5.0,
    min_change_ns: Optional[float] = None,
    min_duration_ns: Optional[float] = None,
) -> RunDiff:
    """Compare two runs kernel by kernel (medians over launches, ``threshold`` percent, changes
    below ``min_change_ns`` never count, kernels shorter than ``min_duration_ns`` left out),
    with the verdict ``polyprof diff`` gives (``result.regressed``; ``str(result)`` is its
    table).

    ``a`` is the baseline, ``b`` the candidate: run directories, ``run.json`` paths or loaded
    ``ProfileRun``s. Returns a ``RunDiff``: ``kernels`` (``KernelChange``: ``a`` and ``b`` sides
    with ``gpu_time_ns`` medians, ``gpu_time_change_pct``, ``change`` ``regressed`` /
    ``improved`` / ``unchanged`` / ``noise`` / ``no_time``), ``only_in_a``, ``only_in_b``,
    ``gpu_time_a_ns``, ``gpu_time_b_ns``, ``regressions``, ``improvements``, ``regressed``."""
    a_name, b_name = (None if isinstance(x, ProfileRun) else os.fspath(x) for x in (a, b))
    data, text, regressed = _native.diff_json(
        _run_json(a), _run_json(b), float(threshold), a_name, b_name, min_change_ns, min_duration_ns
    )
    return RunDiff(json.loads(data), regressed=regressed, text=text)


def report(run: RunLike, *, format: str = "table", device: Optional[str] = None) -> str:
    """A run rendered as ``polyprof report`` does: ``table``, ``json``, ``csv``, ``hatchet``
    (llnl-hatchet literal), ``chrome`` (Perfetto), ``html`` (a self-contained page: roofline,
    timelines, kernel table) or ``svg`` (the roofline alone)."""
    return _native.render(_run_json(run), format, device).decode("utf-8")
