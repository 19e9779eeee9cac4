"""The profiler_command face that Python evaluation pipelines already use, backed by polyprof's
Rust backends. A pipeline written against ``profiler_command`` runs with only its import line
changed::

    from polyprof.profiler_command import get_profilers, ProfilerUnavailable

``get_profilers(language, arch, profiler_type=None)`` returns one class per pass (a subclass of
``Profiler`` with the pass's settings bound); instantiating it with an output directory gives a
profiler with ``name``, ``wrap_cmd(cmd) -> str``,
``env_vars()``, ``end_marker()``, ``prepare(host_output_dir)``, ``read_output()`` and
``unavailable_reason()``. Unlike the old module, ``wrap_cmd`` quotes correctly (an argument
such as ``--template_params=(16, 32)`` reaches the program verbatim) and the selection table is
polyprof's (``polyprof select``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple, Type

from . import _native
from ._native import ProfilerUnavailable

__all__ = [
    "Profiler",
    "ProfilerUnavailable",
    "get_profilers",
    "NCU",
    "Unitrace",
    "OCLUnitrace",
    "VTune",
    "Metal",
    "NoProfiler",
]


class Profiler:
    """One profiler pass writing into ``output_dir``."""

    #: backend name; set by subclasses
    backend: str = "none"

    def __init__(self, output_dir: "os.PathLike[str] | str", **settings: Any):
        self.output_dir = os.fspath(output_dir)
        self._settings = {k: v for k, v in settings.items() if v is not None}
        self._native = _native.NativeProfiler(self.backend, self.output_dir, json.dumps(self._settings))
        self.last_parsed: Optional[Dict[str, Any]] = None
        self.last_errors: List[str] = []

    @property
    def name(self) -> str:
        return self._native.name

    def wrap_cmd(self, cmd: str) -> str:
        """The profiled command as one POSIX shell string (``cmd`` is split with shell rules)."""
        return self._native.wrap_cmd(cmd)

    def plan(self, argv: List[str]) -> Dict[str, Any]:
        """The plan as data: steps with argv vectors, env, end marker, graces."""
        plan: Dict[str, Any] = json.loads(self._native.plan_json([os.fspath(a) for a in argv]))
        return plan

    def env_vars(self) -> Dict[str, str]:
        return dict(self._native.env_vars())

    def end_marker(self) -> Optional[str]:
        """``"pytest"``, a literal substring, or ``None``."""
        return self._native.end_marker()

    def graces(self) -> Tuple[float, float]:
        """``(marker_grace_s, kill_grace_s)`` for this profiler, seconds."""
        marker_grace_s, kill_grace_s = self._native.graces()
        return (marker_grace_s, kill_grace_s)

    def prepare(self, host_output_dir: "os.PathLike[str] | str") -> None:
        self._native.prepare(os.fspath(host_output_dir))

    def read_output(self) -> Dict[str, str]:
        """The raw files the profiler wrote, name → text. The parsed records are in
        ``last_parsed`` afterwards (polyprof's normalized kernels, diagnostics). Raises
        ``ProfilerUnavailable`` when the output says the profiler could not collect (for
        example ncu's counter-permission error)."""
        files, parsed, errors = self._native.read_output()
        self.last_parsed = json.loads(parsed)
        self.last_errors = list(errors)
        for diagnostic in self.last_parsed.get("diagnostics", []):
            if diagnostic.get("severity") == "error" and diagnostic.get("kind") in _UNAVAILABLE_KINDS:
                hint = diagnostic.get("hint")
                raise ProfilerUnavailable(
                    f"{self.name}: {diagnostic.get('message')}" + (f" ({hint})" if hint else "")
                )
        return dict(files)

    def unavailable_reason(self) -> Optional[str]:
        return self._native.unavailable_reason()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.output_dir!r})"


#: Diagnostic kinds that mean "this profiler cannot collect here" rather than "the program failed".
_UNAVAILABLE_KINDS = {"counter_permission", "profiler_library_not_loaded", "counter_library", "driver_resource_busy"}


class NoProfiler(Profiler):
    backend = "none"


class NCU(Profiler):
    backend = "ncu"


class Unitrace(Profiler):
    backend = "unitrace"

    def __init__(self, output_dir: "os.PathLike[str] | str", group: str = "ComputeBasic", **settings: Any):
        super().__init__(output_dir, metric_group=group, **settings)


class OCLUnitrace(Profiler):
    backend = "ocl-unitrace"

    def __init__(self, output_dir: "os.PathLike[str] | str", group: str = "ComputeBasic", **settings: Any):
        super().__init__(output_dir, metric_group=group, **settings)


class VTune(Profiler):
    backend = "vtune"


class Metal(Profiler):
    backend = "metal"


_CLASSES = {cls.backend: cls for cls in (NoProfiler, NCU, Unitrace, OCLUnitrace, VTune, Metal)}


def _pass_class(profiler: str, settings: Dict[str, Any]) -> Type[Profiler]:
    """A subclass of the backend's class (``NCU``, ``Unitrace``, …) with this pass's settings
    bound: ``cls(output_dir)`` builds the pass; keyword settings given there win."""
    base = _CLASSES.get(profiler) or type(f"{profiler}Profiler", (Profiler,), {"backend": profiler})
    bound = dict(settings)

    def __init__(self: Profiler, output_dir: "os.PathLike[str] | str", **overrides: Any) -> None:
        Profiler.__init__(self, output_dir, **{**bound, **overrides})

    label = bound.get("metric_group")
    return type(
        base.__name__,
        (base,),
        {
            "__init__": __init__,
            "__module__": __name__,
            "__qualname__": base.__qualname__ + (f"[{label}]" if label else ""),
            "__doc__": base.__doc__,
            "profiler": profiler,
            "settings": bound,
        },
    )


def get_profilers(language: str, arch: str, profiler_type: Optional[str] = None) -> List[Type[Profiler]]:
    """One class per profiler pass for ``language`` on ``arch`` (``profiler_type`` forces one
    profiler): a subclass of ``Profiler`` (``NCU``, ``Unitrace``, …) with the pass's settings
    bound, as ``settings``; instantiate it with the pass's output directory. Unknown names raise
    ``ValueError`` listing the valid ones."""
    passes = json.loads(_native.select_json(language, arch, profiler_type))
    return [_pass_class(p["profiler"], p.get("settings") or {}) for p in passes]
