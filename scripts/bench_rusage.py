#!/usr/bin/env python3
"""Run several commands interleaved, N rounds, and print per command the median wall time, the
median CPU time (user + system, of the command and every descendant it waited for, from
wait4's rusage) and the median page faults (minor + major). Used by scripts/bench-runner.sh:
on a loaded shared machine the wall times swing, the CPU time and the faults much less.

usage: bench_rusage.py N LABEL=CMD [LABEL=CMD ...]   (CMD split on spaces; its output discarded)
"""

import os
import statistics
import sys
import time


def run_once(argv: list[str]) -> tuple[float, float, int]:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        t0 = time.perf_counter_ns()
        pid = os.posix_spawnp(
            argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
        )
        _, status, usage = os.wait4(pid, 0)
        t1 = time.perf_counter_ns()
    finally:
        os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench_rusage: `{' '.join(argv)}` failed ({status})")
    cpu_ms = (usage.ru_utime + usage.ru_stime) * 1000
    return (t1 - t0) / 1e6, cpu_ms, usage.ru_minflt + usage.ru_majflt


def main() -> None:
    rounds = int(sys.argv[1])
    commands = [arg.split("=", 1) for arg in sys.argv[2:]]
    samples: dict[str, list[tuple[float, float, int]]] = {label: [] for label, _ in commands}
    for _ in range(rounds):
        for label, cmd in commands:
            samples[label].append(run_once(cmd.split()))
    for label, _ in commands:
        wall = statistics.median(s[0] for s in samples[label])
        cpu = statistics.median(s[1] for s in samples[label])
        faults = statistics.median(s[2] for s in samples[label])
        print(f"{label}\t{wall:.3f}\t{cpu:.3f}\t{faults:.0f}")


if __name__ == "__main__":
    main()
