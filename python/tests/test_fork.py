"""A tokio runtime created before fork() and used in the child aborts the parent unless it is
rebuilt per process; Celery's prefork pool and multiprocessing's fork start method do this."""

import multiprocessing
import os
import sys

import pytest

import polyprof


def _child_run(i):
    r = polyprof.run(["sh", "-c", f"echo child-{i}"])
    return (os.getpid(), r.stdout.head)


def test_fork_pool_after_the_parent_used_the_runtime():
    assert polyprof.run(["true"]).returncode == 0  # the parent's runtime exists now
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        results = pool.map(_child_run, range(6))
    assert sorted(h for _, h in results) == sorted([[f"child-{i}"] for i in range(6)])
    assert all(pid != os.getpid() for pid, _ in results)
    # and the parent is still healthy
    assert polyprof.run(["sh", "-c", "echo parent"]).stdout.head == ["parent"]


def test_prefork_worker_in_the_celery_style():
    """Celery's prefork: the master imports the app (and here uses polyprof), then forks long-lived
    workers that each take several tasks."""
    billiard = pytest.importorskip("billiard")
    assert polyprof.run(["true"]).returncode == 0
    with billiard.Pool(2, maxtasksperchild=None) as pool:
        results = pool.map(_child_run, range(6))
    assert len(results) == 6
    assert polyprof.run(["true"]).returncode == 0


def test_bare_fork_child_uses_polyprof_and_the_parent_survives():
    assert polyprof.run(["true"]).returncode == 0
    pid = os.fork()
    if pid == 0:  # child
        code = 0 if polyprof.run(["sh", "-c", "exit 7"]).returncode == 7 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert polyprof.run(["true"]).returncode == 0
