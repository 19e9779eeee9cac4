"""``polyprof.batch``: many jobs over this host's device pool, as ``polyprof batch`` runs them.

    index = polyprof.batch(
        [{"id": f"k{i}", "target": ["python3", "bench.py", str(i)], "profiler": "ncu"} for i in range(100)],
        "runs/night",
    )
    for entry in index.entries:
        print(entry.id, entry.state, entry.total_kernel_ns)
    run = index.load("k7")          # the job's run document (ProfileRun)

Each job is a dict with the job file's keys (``id``, ``target``, ``profiler`` or ``language`` +
``arch``, ``timeout_s``, ``env``, ``end_marker``, ``ncu``, ``container``, ``labels``,
``retries``; see docs/batch.md), or pass the path of a job file (JSON Lines or TOML).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _native
from ._options import PathLike, run_options
from ._types import Document, Outcome, ProfileRun

__all__ = ["batch", "BatchIndex", "BatchEntry"]


class BatchEntry(Document):
    """One job of a batch: its final ``state`` (``succeeded``, ``failed``, ``timed_out``,
    ``crashed``, ``cancelled``, ``lost``, ``skipped`` (a stage the cascade left out; ``cascade``
    says why), ``pending``, ``running``), where its run went
    (``run_dir``, relative to the batch root), the device, attempts and key figures."""

    _nested = {"outcome": Outcome}

    id: str
    state: str
    run_dir: str
    passes: List[str]
    attempts: int
    device: Optional[str]
    node: Optional[str]
    duration_s: Optional[float]
    exit_code: Optional[int]
    outcome: Optional[Outcome]
    kernels: int
    total_kernel_ns: Optional[float]
    top_kernel: Optional[str]
    errors: List[str]
    device_error: Optional[str]
    labels: Dict[str, str]
    cascade: Optional[Dict[str, Any]]

    @property
    def succeeded(self) -> bool:
        return bool(self._data.get("state") == "succeeded")


class BatchIndex(Document):
    """The batch's index (``batch.json``): every job's entry keyed by id, and the devices."""

    _nested = {"jobs": {"*": BatchEntry}}

    schema_version: int
    job_file: str
    backend: str
    jobs: Dict[str, BatchEntry]
    devices: List[Dict[str, Any]]
    cascade: Optional[Dict[str, Any]]

    def __init__(self, data: Dict[str, Any], root: Optional[str] = None):
        super().__init__(data)
        object.__setattr__(self, "_root", root)

    __slots__ = ("_root",)
    #: The batch root it was read from, when it was.
    _root: Optional[str]

    @property
    def entries(self) -> List[BatchEntry]:
        """The entries in the job list's order."""
        return sorted(self.jobs.values(), key=lambda e: e._data.get("order", 0))

    @property
    def succeeded(self) -> bool:
        """Every job succeeded."""
        return all(e.succeeded for e in self.jobs.values())

    def load(self, job_id: str, pass_index: int = 0) -> ProfileRun:
        """The run document of job ``job_id`` (its ``pass_index``-th pass when it had several)."""
        from . import load as _load

        entry = self.jobs[job_id]
        if self._root is None:
            raise ValueError("this index was not read from a batch root; load the run directory yourself")
        run_dir = os.path.join(self._root, entry.run_dir)
        passes = entry.passes or []
        if passes:
            run_dir = os.path.join(run_dir, passes[pass_index])
        return _load(run_dir)


JobsArg = Union[PathLike, Iterable[Mapping[str, Any]]]


def batch(
    jobs: JobsArg,
    output_dir: PathLike,
    *,
    devices: Optional[Union[str, Sequence[int]]] = None,
    parallel: Optional[int] = None,
    resume: bool = False,
    retries: int = 0,
    timeout: Optional[float] = None,
    quarantine_after: Optional[int] = None,
    device_errors: Sequence[str] = (),
    env_policy: str = "inherit",
    allow_env: Sequence[str] = (),
) -> BatchIndex:
    """Run ``jobs`` into ``output_dir`` (one run directory per job under ``runs/``, plus
    ``batch.json``): one job per GPU at a time, each pinned through its vendor's visibility
    variable (``CUDA_VISIBLE_DEVICES``, ``ROCR_VISIBLE_DEVICES``, ``ZE_AFFINITY_MASK``), or
    ``parallel`` CPU slots when there is no GPU (``devices="cpu"``). A job's crash, hang or
    timeout never stops the batch; ``resume=True`` keeps what an earlier, interrupted run of the
    same root finished. The GIL is released while it runs; Ctrl-C cancels the running jobs and
    raises ``KeyboardInterrupt`` (``batch.json`` then says which were cancelled)."""
    if isinstance(devices, (list, tuple)):
        devices = ",".join(str(d) for d in devices)
    options: Dict[str, Any] = {"resume": bool(resume), "retries": int(retries)}
    for key, value in (
        ("devices", devices),
        ("parallel", parallel),
        ("timeout_s", None if timeout is None else float(timeout)),
        ("quarantine_after", quarantine_after),
    ):
        if value is not None:
            options[key] = value
    if device_errors:
        options["device_errors"] = list(device_errors)
    run = run_options(env_policy=env_policy, allow_env=allow_env)
    root = os.fspath(output_dir)
    if isinstance(jobs, (str, bytes, os.PathLike)):
        text = _native.batch_json(root, jobs_file=os.fsdecode(jobs), batch_json=json.dumps(options), options_json=run)
    else:
        lines = [json.dumps(dict(job)) for job in jobs]
        if not lines:
            raise ValueError("no jobs: give at least one job")
        text = _native.batch_json(root, jobs_jsonl="\n".join(lines) + "\n", batch_json=json.dumps(options), options_json=run)
    return BatchIndex(json.loads(text), root=root)
