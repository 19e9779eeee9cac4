"""``polyprof.batch(..., ray=ADDRESS)`` against a real Ray cluster on this machine's loopback
addresses (scripts/ray-local.sh: a head and two workers with two declared GPUs each)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import polyprof

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ray-local.sh"
# Apart from the Rust tests' cluster (6490) and the script's default (7390).
ENV = dict(os.environ, POLYPROF_RAY_PORT="6790")


@pytest.fixture(scope="module")
def ray_address(tmp_path_factory):
    installed = subprocess.run([str(SCRIPT), "install"], env=ENV, capture_output=True, text=True)
    if installed.returncode != 0:
        pytest.skip(f"Ray could not be installed (scripts/ray-local.sh install): {installed.stderr.strip()}")
    cluster = tmp_path_factory.mktemp("ray")
    up = subprocess.run([str(SCRIPT), "up", str(cluster)], env=ENV, capture_output=True, text=True)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield up.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([str(SCRIPT), "down", str(cluster)], env=ENV, capture_output=True)


def test_jobs_from_python_run_as_ray_jobs_each_on_its_own_gpu(tmp_path, ray_address):
    body = "import os; print('gpu=' + os.environ['CUDA_VISIBLE_DEVICES'])"
    jobs = [
        {"id": f"p{i}", "target": [sys.executable, "-c", body], "labels": {"gen": str(i)}}
        for i in range(4)
    ]
    root = tmp_path / "b"
    index = polyprof.batch(jobs, root, ray=ray_address)
    assert index.backend == "ray"
    assert index.succeeded, {e.id: e.errors for e in index.entries}
    # The nodes read the jobs from the batch root.
    assert (root / "ray" / "jobs.jsonl").read_text().count("\n") == 4
    for entry in index.entries:
        gpu = entry.device.split(":")[1]
        out = (root / entry.run_dir / "run.1.stdout.log").read_text().strip()
        assert out == f"gpu={gpu}"
        assert entry.ray["node_ip"] in ("127.0.0.3", "127.0.0.4")


def test_a_problems_stages_from_python_go_through_the_cascade_on_ray(tmp_path, ray_address):
    candidates = []
    for name, mark in (("good", "# ok"), ("bad", "# not")):
        path = tmp_path / f"{name}.sh"
        path.write_text(mark + '\necho run >> "$0.count"\n')
        candidates.append(str(path))
    problem = {
        "problem": {
            "id": "q",
            "target": ["sh", "{candidate}"],
            "candidates": candidates,
            "stages": ["check", "time"],
            "check": ["grep", "-q", "# ok", "{candidate}"],
            "profiler": "none",
        }
    }
    index = polyprof.batch([problem], tmp_path / "b", ray=ray_address)
    states = {e.id: e.state for e in index.entries}
    assert states == {
        "q.good.check": "succeeded",
        "q.good.time": "succeeded",
        "q.bad.check": "failed",
        "q.bad.time": "skipped",
    }
    assert "stage `check` did not pass" in index.jobs["q.bad.time"].cascade["skip"]["reason"]
    assert not (tmp_path / "bad.sh.count").exists(), "a candidate that failed its check never ran"
    assert [s["stage"] for s in index.cascade["stages"]] == ["check", "time"]


def test_an_unreachable_cluster_raises_connection_error(tmp_path):
    with pytest.raises(ConnectionError, match="cannot reach the Ray dashboard"):
        polyprof.batch([{"id": "a", "target": ["true"]}], tmp_path / "b", ray="http://127.0.0.1:9", polyprof_bin="/bin/true")
    with pytest.raises(ValueError, match="go with ray="):
        polyprof.batch([{"id": "a", "target": ["true"]}], tmp_path / "c", max_parallel=2)
