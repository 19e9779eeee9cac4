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
    #: A Ray batch's job: ``submission_id``, ``status``, ``error_type``, ``node_id``, ``node_ip``.
    ray: Optional[Dict[str, Any]]
    #: A Slurm batch's task: ``array_job_id``, ``task_id``, ``state``, ``node``.
    slurm: Optional[Dict[str, Any]]

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
    #: A Ray batch's cluster: ``address``, ``batch_key``.
    ray: Optional[Dict[str, Any]]

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
    ray: Optional[str] = None,
    ray_gpus: Optional[float] = None,
    ray_cpus: Optional[float] = None,
    ray_resources: Optional[Mapping[str, float]] = None,
    max_parallel: Optional[int] = None,
    time_limit: Optional[str] = None,
    polyprof_bin: Optional[PathLike] = None,
) -> BatchIndex:
    """Run ``jobs`` into ``output_dir`` (one run directory per job under ``runs/``, plus
    ``batch.json``): one job per GPU at a time, each pinned through its vendor's visibility
    variable (``CUDA_VISIBLE_DEVICES``, ``ROCR_VISIBLE_DEVICES``, ``ZE_AFFINITY_MASK``), or
    ``parallel`` CPU slots when there is no GPU (``devices="cpu"``). A job's crash, hang or
    timeout never stops the batch; ``resume=True`` keeps what an earlier, interrupted run of the
    same root finished. The GIL is released while it runs; Ctrl-C cancels the running jobs and
    raises ``KeyboardInterrupt`` (``batch.json`` then says which were cancelled).

    ``ray="http://head:8265"`` sends each job to that Ray cluster as one Ray job instead
    (docs/ray.md): ``ray_gpus`` (1), ``ray_cpus`` and ``ray_resources`` are what each job asks
    Ray for, ``max_parallel`` caps the jobs in flight, ``time_limit`` (``"30"`` minutes,
    ``"1:00:00"``) stops a job running longer, ``polyprof_bin`` is polyprof's executable as the
    nodes see it (default: the one in this package). The batch root, the job file and that
    executable must be on a filesystem the nodes share; a list of jobs is written to
    ``output_dir/ray/jobs.jsonl``. An unreachable cluster raises ``ConnectionError``."""
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
    if ray is not None:
        if polyprof_bin is None:
            from ._cli import executable

            try:
                polyprof_bin = executable()
            except SystemExit:
                raise RuntimeError(
                    "polyprof's executable is not in this installation; give polyprof_bin= (its path as the Ray nodes see it)"
                ) from None
        options["ray"] = str(ray)
        options["polyprof_bin"] = os.fspath(polyprof_bin)
        for key, value in (
            ("ray_gpus", None if ray_gpus is None else float(ray_gpus)),
            ("ray_cpus", None if ray_cpus is None else float(ray_cpus)),
            ("max_parallel", max_parallel),
            ("time_limit", None if time_limit is None else str(time_limit)),
        ):
            if value is not None:
                options[key] = value
        if ray_resources:
            options["ray_resources"] = {str(k): float(v) for k, v in ray_resources.items()}
    elif any(v is not None for v in (ray_gpus, ray_cpus, ray_resources, max_parallel, time_limit, polyprof_bin)):
        raise ValueError("ray_gpus, ray_cpus, ray_resources, max_parallel, time_limit and polyprof_bin go with ray=")
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
