import pytest

import polyprof
from polyprof import KernelBenchmark


@pytest.mark.parametrize("kwargs", [{"repeat": 0}, {"repeat": -3}, {"warmup": -1}, {"flops": -1.0}])
def test_bad_arguments_are_value_errors_before_anything_runs(kwargs):
    called = []
    with pytest.raises(ValueError):
        polyprof.benchmark_kernel(lambda: called.append(1), **kwargs)
    assert not called


def test_statistics_and_rates_come_from_the_shared_module():
    b = KernelBenchmark.from_times("k", [1.0, 2.0, 100.0], flops=4e9, bytes_moved=1e9)
    assert b.calls == 3 and b.median_ms == 2.0 and b.max_ms == 100.0
    assert abs(b.gflops_per_s - 2000.0) < 1e-9
    assert abs(b.gb_per_s - 500.0) < 1e-9
    assert b.summary().startswith("k: 3 calls, GPU ms min 1.0000 median 2.0000")


def test_empty_times_are_a_value_error():
    with pytest.raises(ValueError):
        KernelBenchmark.from_times("k", [])


def test_cuda_benchmark_on_a_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = polyprof.benchmark_kernel(torch.matmul, a, a, repeat=20, warmup=3, flops=2 * 4096**3)
    assert b.calls == 20 and b.cv < 0.1


def test_cuda_microsecond_kernels_are_timed_in_graph_pairs():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.randn(1 << 16, device="cuda")
    b = polyprof.benchmark_kernel(torch.add, x, x, repeat=10, warmup=2)
    assert b.method.startswith("cuda_graph") and "flush+call" in b.method, b.method
    assert b.calls == 10 and b.median_ms > 0
    warm = polyprof.benchmark_kernel(torch.add, x, x, repeat=10, warmup=2, flush_l2=False)
    assert "separator+call" in warm.method, warm.method
    forced = polyprof.benchmark_kernel(torch.add, x, x, repeat=5, warmup=1, graph=False)
    assert forced.method == "events"
