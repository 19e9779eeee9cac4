#!/usr/bin/env python3
"""Check a polyprof Chrome trace / Perfetto JSON export (standard library only).

    scripts/check-chrome.py FILE [--kernels N]

Checks:
  - the file is a JSON object with a "traceEvents" list;
  - every X event has name, cat, numeric ts >= 0 and dur >= 0 (µs), integer pid and tid, args;
  - every pid has a process_name M event and every (pid, tid) with X events a thread_name;
  - on each lane (pid, tid), X events only follow each other or nest completely; kernels
    (cat "kernel") never nest or overlap at all;
  - --kernels N: exactly N kernel events.
Exit 0 when all hold, 1 on a failed check (each printed), 2 when the file cannot be read.
"""
import argparse
import json
import sys
from collections import defaultdict

EPS = 1e-9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--kernels", type=int)
    args = parser.parse_args()
    try:
        with open(args.file, encoding="utf-8") as handle:
            trace = json.load(handle)
    except (OSError, ValueError) as error:
        print(f"check-chrome: cannot read {args.file}: {error}", file=sys.stderr)
        return 2

    failures = []
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        print("check-chrome: FAIL no traceEvents list")
        return 1
    process_names, thread_names = set(), set()
    lanes = defaultdict(list)
    for event in events:
        ph = event.get("ph")
        if ph == "M":
            if event.get("name") == "process_name":
                process_names.add(event["pid"])
            elif event.get("name") == "thread_name":
                thread_names.add((event["pid"], event["tid"]))
            continue
        if ph != "X":
            continue
        for key in ("name", "cat", "ts", "dur", "pid", "tid", "args"):
            if key not in event:
                failures.append(f"X event without {key}: {event}")
                break
        else:
            if not isinstance(event["ts"], (int, float)) or event["ts"] < 0:
                failures.append(f"ts not a number >= 0: {event['name']} {event['ts']}")
            if not isinstance(event["dur"], (int, float)) or event["dur"] < 0:
                failures.append(f"dur not a number >= 0: {event['name']} {event['dur']}")
            if not isinstance(event["pid"], int) or not isinstance(event["tid"], int):
                failures.append(f"pid/tid not integers: {event['name']}")
            lanes[(event["pid"], event["tid"])].append(event)

    kernels = 0
    for lane, xs in lanes.items():
        if lane[0] not in process_names:
            failures.append(f"pid {lane[0]} has no process_name M event")
        if lane not in thread_names:
            failures.append(f"lane {lane} has no thread_name M event")
        xs.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []  # ends of the enclosing events
        for event in xs:
            start, end = event["ts"], event["ts"] + event["dur"]
            kernels += event["cat"] == "kernel"
            while open_ends and open_ends[-1][0] <= start + EPS:
                open_ends.pop()
            if open_ends:
                parent_end, parent = open_ends[-1]
                if event["cat"] == "kernel" or parent["cat"] == "kernel":
                    failures.append(f"kernels overlap on lane {lane}: {parent['name']} and {event['name']}")
                elif end > parent_end + EPS:
                    failures.append(f"partial overlap on lane {lane}: {parent['name']} and {event['name']}")
            open_ends.append((end, event))
    if args.kernels is not None and kernels != args.kernels:
        failures.append(f"expected {args.kernels} kernel events, found {kernels}")

    for failure in failures:
        print(f"check-chrome: FAIL {failure}")
    if failures:
        return 1
    print(f"check-chrome: ok: {sum(len(x) for x in lanes.values())} X events ({kernels} kernels) on {len(lanes)} lanes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
