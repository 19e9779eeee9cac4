#!/usr/bin/env python3
"""Where an eval's GPU-held time went, candidate by candidate, from its phase log.

    RUST_LOG=polyprof::pipeline::eval=debug polyprof eval ... 2> warm.log
    scripts/eval_phases.py warm.log [more.log ...]

The log is the one `scripts/bench-eval-throughput.sh` (MODE=gpu) keeps as `runs/<problem>/warm.log`.
Each judged turn ("the judged turn begins") is split at its milestones into phases:

  setup        the trusted worker's setup (the first turn of a warm evaluator) and the
               candidate's worker up and set up
  correctness  the correctness trials
  timing       the timing blocks (reference and candidate, with their checks)
  work         the work pass: its worker's setup (which first waits for the worker, started
               ahead, to finish loading: at the turn's beginning since 5dad79f, after the
               correctness trials before it), warmup, profiled calls and end; and the
               reference's work pass where one is taken
  close        the scored trace read and the workers closed (an incorrect candidate's releases
               before that count in its last phase)

and, across phases, the time spent in `check` requests (comparing the candidate's outputs with
the reference's) and in reading the device's conditions. An incorrect candidate is not timed and
has no work pass; "stopped early" is a turn that ended before its correctness was known (its
candidate raised or crashed). The last table averages turns by outcome.
"""
from __future__ import annotations

import re
import sys
from datetime import datetime
from typing import Dict, List, Optional, Tuple

PHASES = ("setup", "correctness", "timing", "work", "close")
# The milestone that ends each phase but the last.
ENDS = {
    "setup": "the candidate is set up",
    "correctness": "the correctness trials are done",
    "timing": "the timing is done",
    "work": "the work pass is done",
}
LINE = re.compile(r"^(\S+)\s+\w+\s+\S+: eval: (.*)$")
MS = re.compile(r"ms=([0-9.]+)")


class Turn:
    def __init__(self, start: datetime) -> None:
        self.start = start
        self.phase = "setup"
        self.phases: Dict[str, float] = {p: 0.0 for p in PHASES}
        self.checks = 0.0
        self.conditions = 0.0
        self.outcome = "stopped early"
        # The latest event's time: where the next interval begins and, at the end, the turn ends.
        self.last = start

    def event(self, at: datetime, message: str) -> None:
        # Closing is what leads to these two, whichever phase the turn stopped in.
        closing = message.startswith(("the scored trace is read", "the workers are closed"))
        self.phases["close" if closing else self.phase] += (at - self.last).total_seconds()
        self.last = at
        ms = MS.search(message)
        if ms and 'op="check"' in message:
            self.checks += float(ms.group(1)) / 1e3
        if ms and "conditions read" in message:
            self.conditions += float(ms.group(1)) / 1e3
        if message.startswith(ENDS["correctness"]):
            self.outcome = "correct" if "correct=true" in message else "incorrect"
        for phase, milestone in ENDS.items():
            if message.startswith(milestone):
                self.phase = PHASES[PHASES.index(phase) + 1]

    @property
    def total(self) -> float:
        return (self.last - self.start).total_seconds()


def timestamp(text: str) -> Optional[datetime]:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def turns_of(path: str) -> List[Turn]:
    turns: List[Turn] = []
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            m = LINE.match(line.strip())
            at = timestamp(m.group(1)) if m else None
            if m is None or at is None:
                continue
            message = m.group(2)
            if message.startswith("the judged turn begins"):
                turns.append(Turn(at))
            elif turns:
                turns[-1].event(at, message)
    return turns


def row(label: str, values: Tuple[float, ...]) -> str:
    return f"{label:<34}" + "".join(f"{v:>12.2f}" for v in values)


def main(paths: List[str]) -> int:
    if not paths:
        print("usage: scripts/eval_phases.py WARM_LOG [WARM_LOG ...]", file=sys.stderr)
        return 2
    header = f"{'turn (s)':<34}" + "".join(f"{h:>12}" for h in ("total", *PHASES, "checks", "cond."))
    by_outcome: Dict[str, List[Turn]] = {}
    for path in paths:
        turns = turns_of(path)
        print(f"{path}: {len(turns)} turns")
        print(header)
        for i, t in enumerate(turns, 1):
            values = (t.total, *(t.phases[p] for p in PHASES), t.checks, t.conditions)
            print(row(f"  {i} {t.outcome}", values))
            by_outcome.setdefault(t.outcome, []).append(t)
        print()
    print("mean by outcome")
    print(header)
    for outcome, ts in sorted(by_outcome.items()):
        n = len(ts)
        mean = (sum(t.total for t in ts) / n, *(sum(t.phases[p] for t in ts) / n for p in PHASES),
                sum(t.checks for t in ts) / n, sum(t.conditions for t in ts) / n)
        print(row(f"  {outcome} ({n})", mean))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
