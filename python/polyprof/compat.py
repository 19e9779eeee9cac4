"""``robust_subprocess_run`` with the signature Python evaluation pipelines already call, on
polyprof's supervised runner:

    from polyprof.compat import robust_subprocess_run
    proc, message = await robust_subprocess_run(cmd, timeout=600,
                                                output_inactivity_timeout=120,
                                                end_marker=profiler.end_marker())

Differences that fix the old function's defects: the output captured before a timeout is
returned (not empty), a line longer than 64 KiB does not raise, a closed stderr does not stop
the marker watch, the process group is always stopped, and a ``str`` command goes to
``/bin/sh -c`` exactly once (use ``Profiler.wrap_cmd``'s correctly quoted string, or a list).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List, Optional, Tuple, Union

from . import run_async
from ._types import RunResult

__all__ = ["robust_subprocess_run", "message_of"]

PASSED_THEN_HUNG = "All tests passed but the process did not exit cleanly and had to be terminated."


def message_of(result: RunResult) -> Optional[str]:
    """The old function's ``message``: ``None`` on a clean exit, else what stopped the run."""
    outcome = result.to_dict().get("outcome") or {}
    kind = outcome.get("kind")
    if kind in ("exited", "signalled"):
        return None
    if kind == "hung_after_marker":
        return PASSED_THEN_HUNG if outcome.get("passed") else ""
    if kind == "timed_out":
        return f"Process timed out after {outcome.get('after_s')} seconds"
    if kind == "inactive":
        return "Process killed due to inactivity"
    if kind == "cancelled":
        return "Process cancelled"
    if kind == "spawn_failed":
        return f"Process could not be started: {outcome.get('error')}"
    return str(kind)


def _read(path: Optional[str]) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


async def robust_subprocess_run(
    cmd: Union[List[str], str],
    timeout: Optional[float] = None,
    output_inactivity_timeout: Optional[float] = None,
    end_marker: Optional[str] = None,
    cwd: Optional[str] = None,
    env: Optional[Dict[str, str]] = None,
    **kwargs: Any,
) -> Tuple["subprocess.CompletedProcess[str]", Optional[str]]:
    """Run ``cmd`` supervised; returns ``(CompletedProcess, message)`` like the old function.
    ``env``, when given, is the child's whole environment (as with ``subprocess``)."""
    if kwargs:
        raise TypeError(f"unsupported keyword arguments: {', '.join(sorted(kwargs))}")
    argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else [os.fspath(a) for a in cmd]
    logs = tempfile.mkdtemp(prefix="polyprof-compat-")
    try:
        result = await run_async(
            argv,
            end_marker=end_marker,
            timeout=timeout,
            inactivity_timeout=output_inactivity_timeout,
            env_policy="clean" if env is not None else "inherit",
            allow_env=list(env) if env is not None else (),
            env=env,
            cwd=cwd,
            log_dir=logs,
        )
        stdout = _read(result.stdout.log_path)
        stderr = _read(result.stderr.log_path)
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    returncode = result.returncode
    if returncode is None:
        # Stopped by polyprof: the old function reported the signal that ended the group.
        returncode = -15
    return subprocess.CompletedProcess(argv, returncode, stdout, stderr), message_of(result)
