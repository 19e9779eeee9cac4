#!/usr/bin/env python3
"""The audit sample of a profile-once OUTDIR (scripts/gpu-profile-once.sh), as evidence to
re-judge: every run the sample drew, with what it profiled and what the cache had served.

    scripts/profile_once_audits.py OUTDIR > audits.json

Reads OUTDIR/{a,b}/runs/*/run.json. The cached duration of each key is that of its first
profile in (a) (the run that stored it: an audit that agrees stores nothing, and (b) reads the
cache (a) filled). Prints a JSON object: `cached` {key: {kernel, duration_ns, origin}} and
`audits` [{root, job, recorded_noise, disagreements, samples: {key: [duration_ns, …]}}] for
the runs whose profile_cache.audited > 0, where `samples` are the durations of each key the run
profiled (the audited hits' and its misses', which the run's noise is measured on).
"""

import glob
import json
import os
import sys


def runs(root):
    found = []
    for path in glob.glob(os.path.join(root, "runs", "*", "run.json")):
        with open(path) as f:
            run = json.load(f)
        found.append((run.get("started_unix_s", 0.0), os.path.basename(os.path.dirname(path)), run))
    return sorted(found, key=lambda r: r[0])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: profile_once_audits.py OUTDIR")
    out = sys.argv[1]
    cached, audits = {}, []
    for _, job, run in runs(os.path.join(out, "a")):
        for record in run.get("kernels", []):
            origin = record.get("cache") or {}
            if origin.get("source") == "profiled" and origin["key"] not in cached:
                cached[origin["key"]] = {"kernel": record["short_name"],
                                         "duration_ns": record["duration_ns"], "origin": f"a/{job}"}
    for root in ("a", "b"):
        for _, job, run in runs(os.path.join(out, root)):
            summary = run.get("profile_cache") or {}
            if not summary.get("audited"):
                continue
            samples = {}
            for record in run.get("kernels", []):
                origin = record.get("cache") or {}
                if origin.get("source") == "profiled" and record.get("duration_ns") is not None:
                    samples.setdefault(origin["key"], []).append(record["duration_ns"])
            audits.append({"root": root, "job": job, "recorded_noise": summary.get("audit_noise"),
                           "disagreements": summary.get("disagreements", []), "samples": samples})
    json.dump({"cached": cached, "audits": audits}, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
