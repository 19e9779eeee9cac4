"""A pipeline in miniature written against the Python profiler_command module (select, wrap,
run under the robust runner, read output), with only its import lines changed to polyprof's."""

import asyncio
import os
import sys

import pytest

# The two import lines a pipeline changes:
from polyprof.profiler_command import ProfilerUnavailable, get_profilers
from polyprof.compat import robust_subprocess_run


def evaluate(language, arch, profiler_type, target, workdir):
    """What KernelFoundry's test_custom_task does per profiler pass (see the notes)."""
    results = {}
    for i, profiler_cls in enumerate(get_profilers(language, arch, profiler_type)):
        out = os.path.join(workdir, f"profiler_output_custom_{i}")
        profiler = profiler_cls(out)
        profiler.prepare(out)
        env = dict(os.environ)
        env["KERNELFOUNDRY_PROFILER"] = profiler.name
        env.update(profiler.env_vars())
        cmd = profiler.wrap_cmd(" ".join(target))
        proc, message = asyncio.run(
            robust_subprocess_run(cmd, timeout=60, output_inactivity_timeout=30,
                                  end_marker=profiler.end_marker(), env=env)
        )
        try:
            output = profiler_cls(out).read_output()
        except ProfilerUnavailable as e:
            output = {"error": str(e)}
        results[f"{profiler.name}.{i:03d}"] = (proc, message, output, profiler)
    return results


def test_pipeline_with_the_none_profiler(tmp_path):
    # `none` is not a selection row; a pipeline that profiles nothing builds it directly.
    from polyprof.profiler_command import NoProfiler

    p = NoProfiler(tmp_path / "none.000")
    cmd = p.wrap_cmd(sys.executable + " -c 'print(\"=== 1 passed in 0.01s ===\")'")
    proc, message = asyncio.run(robust_subprocess_run(cmd, timeout=30, end_marker=p.end_marker()))
    assert proc.returncode == 0 and message is None
    assert "1 passed" in proc.stdout
    assert p.read_output() == {}


def test_pipeline_with_a_fake_ncu(tmp_path, fake_ncu_path):
    target = [sys.executable, "-c", "'print(\"hello from the kernel test\")'"]
    results = evaluate("cuda", "h200", None, target, str(tmp_path))
    assert list(results) == ["ncu.000"]
    proc, message, output, profiler = results["ncu.000"]
    assert proc.returncode == 0, proc.stderr
    assert "hello from the kernel test" in proc.stdout
    assert "ncu.log" in output and "==PROF==" in output["ncu.log"]
    kernels = profiler.last_parsed["kernels"] if profiler.last_parsed else []
    # the real H200 capture's kernels come out normalized
    reread = get_profilers("cuda", "h200")[0](tmp_path / "profiler_output_custom_0")
    reread.read_output()
    assert len(reread.last_parsed["kernels"]) > 0
    assert all(k.get("duration_ns") for k in reread.last_parsed["kernels"])


def test_wrap_cmd_keeps_awkward_arguments_intact(tmp_path):
    p = get_profilers("cuda", "h200")[0](tmp_path)
    wrapped = p.wrap_cmd("python3 task.py --template_params='(16, 32)'")
    assert "'--template_params=(16, 32)'" in wrapped


def test_unknown_language_is_a_value_error_listing_the_valid_ones():
    with pytest.raises(ValueError, match="cuda"):
        get_profilers("cobol", "h200")


def test_each_factory_builds_a_profiler_with_the_known_face(tmp_path):
    passes = get_profilers("sycl", "pvc")
    assert len(passes) == 3
    names = set()
    for f in passes:
        p = f(tmp_path / "x")
        names.add(p.name)
        assert isinstance(p.env_vars(), dict)
        assert p.end_marker() in ("pytest", None) or isinstance(p.end_marker(), str)
        assert p.unavailable_reason()  # no Intel GPU here: a reason with its fix
    assert names == {"unitrace"}


def test_get_profilers_returns_profiler_classes_with_their_settings(tmp_path):
    from polyprof.profiler_command import NCU, Profiler, Unitrace

    passes = get_profilers("sycl", "pvc")
    assert all(isinstance(cls, type) and issubclass(cls, Unitrace) for cls in passes)
    groups = [cls.settings.get("metric_group") for cls in passes]
    assert len(set(groups)) == 3 and None not in groups
    profiler = passes[1](tmp_path / "x")
    assert isinstance(profiler, Profiler) and isinstance(profiler, passes[1])
    assert profiler._settings["metric_group"] == groups[1]
    (ncu,) = get_profilers("cuda", "h200")
    assert issubclass(ncu, NCU) and ncu.profiler == "ncu"
    assert ncu(tmp_path / "n").name == "ncu"
