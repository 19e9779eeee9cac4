import asyncio
import time

import polyprof


def test_concurrent_runs_overlap_and_the_loop_keeps_ticking():
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.02)

        t = asyncio.ensure_future(ticker())
        started = time.monotonic()
        results = await asyncio.gather(*[polyprof.run_async(["sleep", "0.5"]) for _ in range(4)])
        elapsed = time.monotonic() - started
        t.cancel()
        return results, elapsed, ticks

    results, elapsed, ticks = asyncio.run(main())
    assert [r.returncode for r in results] == [0, 0, 0, 0]
    assert elapsed < 1.8  # four 0.5 s runs at once, not one after the other
    assert ticks >= 10


def test_cancelling_the_task_stops_the_process(tmp_path):
    pidfile = tmp_path / "pid"

    async def main():
        task = asyncio.ensure_future(
            polyprof.run_async(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"], kill_grace=0.3)
        )
        for _ in range(100):
            await asyncio.sleep(0.05)
            if pidfile.exists() and pidfile.read_text().strip():
                break
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    import os

    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still alive after the task was cancelled")
