"""Keyword options → the JSON the native layer reads. Checked here so that a misspelt option is a
``ValueError`` naming it, not silently ignored."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from typing import TypedDict

PathLike = Union[str, "os.PathLike[str]"]

#: ``end_marker`` as the Python profiler_command API spells it: ``"pytest"`` (the pytest summary
#: line), ``None`` (no marker), ``"regex:RE"``, ``"literal:TEXT"`` or any other string (a literal
#: substring).
EndMarkerArg = Optional[str]


def marker(value: EndMarkerArg) -> str:
    if value is None or value == "none":
        return "none"
    if not isinstance(value, str):
        raise ValueError(f"end_marker must be a string or None, got {type(value).__name__}")
    if value == "pytest" or value.startswith(("literal:", "regex:")):
        return value
    return "literal:" + value


def argv_list(argv: Union[Sequence[str], str]) -> List[str]:
    if isinstance(argv, (str, bytes)):
        raise ValueError(
            "argv must be a list of arguments, not one string (polyprof never runs a shell "
            "string); use shlex.split(cmd) if you hold one"
        )
    out = [os.fspath(a) for a in argv]
    if not out:
        raise ValueError("argv is empty: give the program and its arguments")
    return out


def run_options(
    *,
    timeout: Optional[float] = None,
    inactivity_timeout: Optional[float] = None,
    end_marker: Any = "__unset__",
    marker_grace: Optional[float] = None,
    kill_grace: Optional[float] = None,
    env_policy: Optional[str] = None,
    allow_env: Sequence[str] = (),
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[PathLike] = None,
    log_dir: Optional[PathLike] = None,
    log_name: Optional[str] = None,
) -> str:
    doc: Dict[str, Any] = {}
    for key, value in (
        ("timeout_s", timeout),
        ("inactivity_timeout_s", inactivity_timeout),
        ("marker_grace_s", marker_grace),
        ("kill_grace_s", kill_grace),
    ):
        if value is not None:
            doc[key] = float(value)
    if end_marker != "__unset__":
        doc["end_marker"] = marker(end_marker)
    if env_policy is not None:
        doc["env_policy"] = env_policy
    if allow_env:
        doc["allow_env"] = list(allow_env)
    if env:
        doc["env"] = {str(k): str(v) for k, v in env.items()}
    if cwd is not None:
        doc["cwd"] = os.fspath(cwd)
    if log_dir is not None:
        doc["log_dir"] = os.fspath(log_dir)
    if log_name is not None:
        doc["log_name"] = log_name
    exe = supervisor()
    if exe is not None:
        doc["supervisor"] = exe
    return json.dumps(doc)


def supervisor() -> Optional[str]:
    """The ``polyprof-supervise`` executable shipped in the wheel (or on PATH): with it every
    descendant of a run is tracked and ended, also one that left the process group, and the tree
    dies with this Python process. Without it runs fall back to process-group tracking."""
    import shutil
    from pathlib import Path

    bundled = Path(__file__).with_name("bin") / "polyprof-supervise"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    return shutil.which("polyprof-supervise")


class ProfileOptions(TypedDict, total=False):
    """The keyword options of ``profile()`` and ``profile_all()``: a misspelt one (``timout=5``)
    is a type error under ``mypy --strict`` and a ``ValueError`` naming it at run time."""

    timeout: Optional[float]
    inactivity_timeout: Optional[float]
    env_policy: Optional[str]
    allow_env: Sequence[str]
    env: Optional[Mapping[str, str]]
    cwd: Optional[PathLike]
    end_marker: EndMarkerArg
    marker_grace: Optional[float]
    kill_grace: Optional[float]
    ncu: Optional[Dict[str, Any]]
    metric_group: Optional[str]
    extra_args: Optional[Sequence[str]]


#: Options of ``profile()`` that go to the profiler (``ProfilerSettings``), not the runner.
SETTINGS_KEYS = ("ncu", "metric_group", "extra_args")


def settings(options: Mapping[str, Any]) -> str:
    doc: Dict[str, Any] = {}
    for key in SETTINGS_KEYS:
        if key in options and options[key] is not None:
            doc[key] = options[key]
    if "extra_args" in doc:
        doc["extra_args"] = [str(a) for a in doc["extra_args"]]
    return json.dumps(doc)


def marker_doc(value: EndMarkerArg) -> Dict[str, Any]:
    """The plan's ``EndMarker`` JSON for an ``end_marker`` argument."""
    text = marker(value)
    if text in ("pytest", "none"):
        return {"kind": text}
    kind, _, rest = text.partition(":")
    return {"kind": kind, "value": rest}


RUN_KEYS = ("timeout", "inactivity_timeout", "env_policy", "allow_env", "env", "cwd")
PLAN_KEYS = ("end_marker", "marker_grace", "kill_grace")


def split(options: Mapping[str, Any], default_graces: Any) -> Tuple[str, str]:
    """(settings_json, run_options_json) from ``profile(**options)``. The end marker and graces
    belong to the profiler's plan (they override its own); the rest to the runner.
    ``default_graces()`` gives the profiler's own ``(marker_grace_s, kill_grace_s)``."""
    unknown = set(options) - set(RUN_KEYS) - set(PLAN_KEYS) - set(SETTINGS_KEYS)
    if unknown:
        valid = ", ".join(sorted(set(RUN_KEYS) | set(PLAN_KEYS) | set(SETTINGS_KEYS)))
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))}; valid: {valid}")
    doc = json.loads(settings(options))
    if "end_marker" in options:
        doc["end_marker"] = marker_doc(options["end_marker"])
    if options.get("marker_grace") is not None or options.get("kill_grace") is not None:
        marker_grace, kill_grace = default_graces()
        if options.get("marker_grace") is not None:
            marker_grace = float(options["marker_grace"])
        if options.get("kill_grace") is not None:
            kill_grace = float(options["kill_grace"])
        for name, value in (("marker_grace", marker_grace), ("kill_grace", kill_grace)):
            if not (value >= 0 and value <= 365 * 24 * 3600):
                raise ValueError(f"{name} must be between 0 and a year of seconds; got {value}")
        doc["graces"] = {"marker_grace": marker_grace, "kill_grace": kill_grace}
    run = {k: v for k, v in options.items() if k in RUN_KEYS}
    return json.dumps(doc), run_options(**run)
