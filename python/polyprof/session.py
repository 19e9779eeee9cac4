"""Call paths for Python code, the Enigma/Proton way, backed by the Rust session:

    with polyprof.profile_session("bench") as prof:
        with polyprof.scope("matmul", metrics={"flops": 2 * n**3, "bytes": 3 * n * n * 4}):
            run_matmul()
    print(prof.key_averages(group_by="name").table(sort_by="gpu_time"))
    prof.export_hatchet("bench.hatchet.json")

Outside a session ``scope`` and ``record_function`` do nothing and cost one attribute read.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from . import _native

__all__ = [
    "profile_session",
    "ProfileSession",
    "scope",
    "record_function",
    "register_kernel_hook",
    "unregister_kernel_hook",
    "KeyAverages",
]

# The active session of this process (one at a time, as in Proton). Read on every scope entry,
# so the inactive path is a module global lookup and a branch.
_active: Optional["ProfileSession"] = None


class KeyAverages:
    """PyTorch-style aggregate rows of a profile."""

    def __init__(self, profile: Any, group_by: str):
        self._profile = profile
        self.group_by = group_by
        self._doc = json.loads(profile.key_averages_json(group_by))

    def table(self, sort_by: str = "gpu_time") -> str:
        """The rows as a text table (``sort_by``: gpu_time, cpu_time, calls, gflops, gbps, name)."""
        return str(self._profile.key_averages_table(self.group_by, sort_by))

    def rows(self) -> List[Dict[str, Any]]:
        return list(self._doc.get("rows", []))

    def by_name(self) -> Dict[str, Dict[str, Any]]:
        return {row["name"]: row for row in self.rows()}

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.rows())

    def __len__(self) -> int:
        return len(self._doc.get("rows", []))

    def __str__(self) -> str:
        return self.table()


class ProfileSession:
    """A recording session; use ``profile_session()`` as a context manager."""

    def __init__(self, name: str = "session"):
        self.name = name
        self._native: Any = None
        self._profile: Any = None

    def __enter__(self) -> "ProfileSession":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.finish()

    def start(self) -> "ProfileSession":
        global _active
        self._native = _native.NativeSession(self.name)
        _active = self
        return self

    def finish(self) -> None:
        global _active
        if self._native is not None and self._profile is None:
            self._profile = self._native.finish()
        if _active is self:
            _active = None

    def _current(self) -> Any:
        if self._profile is not None:
            return self._profile
        if self._native is None:
            raise ValueError("the session has not started; use `with polyprof.profile_session():`")
        return self._native.snapshot()

    def add_kernel(
        self,
        name: str,
        gpu_time_ns: float,
        *,
        flops: Optional[float] = None,
        bytes: Optional[float] = None,
        grid: Optional[Tuple[int, int, int]] = None,
        block: Optional[Tuple[int, int, int]] = None,
    ) -> None:
        """Record a kernel launch the caller timed, under the current call path."""
        if self._native is None or self._profile is not None:
            raise ValueError("add_kernel needs a session that is recording")
        self._native.add_kernel(name, float(gpu_time_ns), flops, bytes, grid, block)

    def key_averages(self, group_by: str = "name") -> KeyAverages:
        """Rows grouped by ``name`` or ``call_path``."""
        return KeyAverages(self._current(), group_by)

    def tree(self) -> str:
        """The call tree as text (inclusive and exclusive figures per node)."""
        return str(self._current().tree_text())

    def events(self) -> List[Dict[str, Any]]:
        events: List[Dict[str, Any]] = json.loads(self._current().events_json())
        return events

    def export_hatchet(self, path: "os.PathLike[str] | str", device: Optional[str] = None) -> None:
        """Write the Hatchet literal (``hatchet.GraphFrame.from_literal``)."""
        self._current().write("hatchet", os.fspath(path), device)

    def export_chrome_trace(self, path: "os.PathLike[str] | str", device: Optional[str] = None) -> None:
        """Write a Chrome trace / Perfetto JSON."""
        self._current().write("chrome", os.fspath(path), device)


def profile_session(name: str = "session") -> ProfileSession:
    """A recording session; one may be active at a time."""
    return ProfileSession(name)


class _NullScope:
    __slots__ = ()

    def __enter__(self) -> "_NullScope":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def add_metric(self, name: str, value: float) -> None:
        return None


_NULL = _NullScope()


class _Scope:
    __slots__ = ("_name", "_metrics", "_kind", "_native")

    def __init__(self, name: str, metrics: Optional[Mapping[str, float]], kind: str):
        self._name = name
        self._metrics = metrics
        self._kind = kind
        self._native: Any = None

    def __enter__(self) -> "_Scope":
        metrics = None if self._metrics is None else {k: float(v) for k, v in self._metrics.items()}
        self._native = _native.open_scope(self._name, metrics, self._kind)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._native is not None:
            self._native.close()
            self._native = None

    def add_metric(self, name: str, value: float) -> None:
        """Add to a metric known only once the work ran (FLOPs, bytes)."""
        if self._native is not None:
            self._native.add_metric(name, float(value))


def scope(name: str, metrics: Optional[Mapping[str, float]] = None) -> Any:
    """A call-path scope (``with`` block). ``metrics`` are additive: ``flops`` (= FP32),
    ``flops16``, ``flops64`` and ``bytes`` feed the roofline; other keys are summed."""
    if _active is None:
        return _NULL
    return _Scope(name, metrics, "scope")


def record_function(name: str) -> Any:
    """PyTorch's name for a scope that marks a function; also a decorator."""
    if callable(name) and not isinstance(name, str):
        fn = name
        return record_function(fn.__qualname__)(fn)

    class _Marker:
        def __enter__(self) -> Any:
            self._inner = _Scope(name, None, "function") if _active is not None else _NULL
            return self._inner.__enter__()

        def __exit__(self, *exc: Any) -> None:
            self._inner.__exit__(*exc)

        def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if _active is None:
                    return fn(*args, **kwargs)
                with _Scope(name, None, "function"):
                    return fn(*args, **kwargs)

            return wrapper

    return _Marker()


def register_kernel_hook(kernel: str, hook: Callable[[Dict[str, Any]], Optional[Mapping[str, float]]]) -> None:
    """Register ``hook(launch) -> {"flops": …, "bytes": …}`` for kernels named ``kernel``
    (full or short name) recorded in the active session without their work (Proton's
    ``launch_metadata``)."""
    if _active is None or _active._native is None:
        raise ValueError("register_kernel_hook needs an active profile_session()")
    _active._native.register_hook(kernel, hook)


def unregister_kernel_hook(kernel: str) -> bool:
    """Remove the hook for ``kernel``; ``False`` when none was registered."""
    if _active is None or _active._native is None:
        return False
    return bool(_active._native.unregister_hook(kernel))


def _add_run_to_active(run_json: str) -> None:
    if _active is not None and _active._native is not None and _active._profile is None:
        _active._native.add_run(run_json)
