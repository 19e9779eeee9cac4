"""Plain Python callables as eval problems: ``polyprof.evaluate(ref_fn, cand_fn, get_inputs=…)``.

The eval runs each side in its own process, so a callable cannot cross as an object: what
crosses is where it is defined. Each side becomes a small KernelBench-format file that loads the
callable's module by path and exposes it as ``Model`` / ``ModelNew`` (a class is used as is, a
function is wrapped). The callable must therefore be defined at module level in a file (not a
lambda, not nested, not typed at the prompt), and that file must be importable without side
effects (a script guards its work with ``if __name__ == "__main__":``).
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
from typing import Any, Callable, Optional, Tuple

#: Module names the user's files are loaded under inside the workers.
_MODULE_NAMES = {"Model": "polyprof_user_reference", "ModelNew": "polyprof_user_candidate"}


def _location(obj: Any, what: str) -> Tuple[str, str]:
    """(file, qualified name) of a module-level function or class, or a clear error."""
    qualname = getattr(obj, "__qualname__", None)
    if not callable(obj) or not qualname:
        raise TypeError(f"{what} must be a path to a problem file or a module-level function or class, not {obj!r}")
    if "<" in qualname:
        raise ValueError(
            f"{what} {qualname!r} is a lambda or a nested function: define it at module level in a file, "
            "so the eval's worker process can import it"
        )
    try:
        path = inspect.getsourcefile(obj)
    except TypeError:
        path = None
    if not path or not os.path.isfile(path):
        raise ValueError(f"{what} {qualname!r} has no source file the worker can import (defined at the prompt?)")
    return os.path.abspath(path), qualname


def _copied(path: str, folder: Optional[str]) -> str:
    """``path`` itself, or (for the candidate) a copy of it in ``folder``: the candidate's worker
    runs in a sandbox that reads only its own folder, never the user's other files."""
    if folder is None:
        return path
    copy = os.path.join(folder, f"{len(os.listdir(folder))}_{os.path.basename(path)}")
    shutil.copyfile(path, copy)
    return copy


def _shim(
    class_name: str,
    target: Any,
    what: str,
    get_inputs: Optional[Callable[..., Any]],
    get_init_inputs: Optional[Callable[..., Any]],
    copy_into: Optional[str] = None,
) -> str:
    path, qualname = _location(target, what)
    path = _copied(path, copy_into)
    lines = [
        f"# polyprof: a KernelBench-format file around {qualname} of {path}",
        "import importlib.util as _util",
        "",
        "",
        "def _load(path, name):",
        "    spec = _util.spec_from_file_location(name, path)",
        "    module = _util.module_from_spec(spec)",
        "    spec.loader.exec_module(module)",
        "    return module",
        "",
        "",
        "def _attr(module, qualname):",
        "    obj = module",
        "    for part in qualname.split('.'):",
        "        obj = getattr(obj, part)",
        "    return obj",
        "",
        "",
        f"_modules = {{{path!r}: _load({path!r}, {_MODULE_NAMES[class_name]!r})}}",
        f"_target = _attr(_modules[{path!r}], {qualname!r})",
        "",
    ]
    if inspect.isclass(target):
        lines.append(f"{class_name} = _target")
    else:
        lines += [
            f"class {class_name}:",
            "    def __init__(self, *init_inputs):",
            "        self.init_inputs = init_inputs",
            "",
            "    def __call__(self, *inputs):",
            "        return _target(*inputs)",
        ]
    for name, fn in (("get_inputs", get_inputs), ("get_init_inputs", get_init_inputs)):
        if fn is None:
            continue
        fn_path, fn_qualname = _location(fn, name)
        fn_path = _copied(fn_path, copy_into)
        module_name = f"{_MODULE_NAMES[class_name]}_{name}"
        lines += [
            "",
            f"if {fn_path!r} not in _modules:",
            f"    _modules[{fn_path!r}] = _load({fn_path!r}, {module_name!r})",
            f"{name} = _attr(_modules[{fn_path!r}], {fn_qualname!r})",
        ]
    if class_name == "Model" and get_init_inputs is None:
        lines += ["", "", "def get_init_inputs():", "    return []"]
    return "\n".join(lines) + "\n"


def problem_files(
    reference: Any,
    candidate: Any,
    get_inputs: Optional[Callable[..., Any]],
    get_init_inputs: Optional[Callable[..., Any]],
) -> Tuple[Any, Any, Optional[str]]:
    """The reference and candidate as paths: given paths pass through, callables become files in
    a fresh directory (returned third, for the caller to remove after the eval)."""
    ref_is_path = isinstance(reference, (str, bytes, os.PathLike))
    cand_is_path = isinstance(candidate, (str, bytes, os.PathLike))
    if ref_is_path and (get_inputs is not None or get_init_inputs is not None):
        raise ValueError("get_inputs/get_init_inputs are for a callable reference; a reference file defines its own")
    if not ref_is_path and get_inputs is None:
        raise ValueError("a callable reference needs get_inputs= (a module-level function returning the call's arguments)")
    if ref_is_path and cand_is_path:
        return reference, candidate, None
    directory = tempfile.mkdtemp(prefix="polyprof-eval-sources-")
    if not ref_is_path:
        text = _shim("Model", reference, "reference", get_inputs, get_init_inputs)
        reference = os.path.join(directory, "reference.py")
        with open(reference, "w", encoding="utf-8") as f:
            f.write(text)
    if not cand_is_path:
        # The candidate's own folder, apart from the reference's shim: its sandbox reads only
        # that folder, so the callable's module is copied in beside its shim.
        folder = os.path.join(directory, "candidate")
        os.mkdir(folder)
        text = _shim("ModelNew", candidate, "candidate", None, None, copy_into=folder)
        candidate = os.path.join(folder, "candidate.py")
        with open(candidate, "w", encoding="utf-8") as f:
            f.write(text)
    return reference, candidate, directory
