#!/usr/bin/env python3
"""The profile-once figures of an OUTDIR of scripts/gpu-profile-once.sh, side by side.

    scripts/profile_once_report.py OUTDIR

Reads OUTDIR/{a,b,c}/batch.json (a: the cascade with the profile cache into a fresh cache, b:
the same batch again on that cache, c: --all-stages without a cache, "ncu every candidate"; c
may be split into c1, c2, … whose jobs are summed), OUTDIR/wall.tsv (each run's wall seconds, if
there) and OUTDIR/gen/manifest.json, and prints per run the device seconds of the time and
profile stages (the sum of their jobs' durations: one GPU runs one job at a time), the jobs run
and skipped, the cache's figures; then the two figures of issue 25: (a)/(c), the GPU seconds for
timing + counters against ncu on every candidate, and (b)'s profile stage against (a)'s and
(c)'s, the second run's profiling cost; and whether the verdicts agree: the candidates (a) and
(b) found incorrect against the generated ones (and (c)'s, when it has a check stage), and the
audit sample's disagreements. Exit status 0 when it could read the three runs.
"""

import json
import os
import re
import statistics
import sys

RUNS = [("a", "cascade + cache (fresh)"), ("b", "cascade + cache (again)"),
        ("c", "all stages, no cache")]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def stage_seconds(index, stage):
    """Device seconds and jobs run of `stage`, from the entries (the cascade summary has them
    too; the entries also count a run whose summary is missing)."""
    seconds, ran, skipped = 0.0, 0, 0
    for entry in index["jobs"].values():
        if entry.get("labels", {}).get("stage") != stage:
            continue
        if entry["state"] == "skipped":
            skipped += 1
        elif entry.get("attempts", 0) > 0:
            ran += 1
            seconds += entry.get("duration_s") or 0.0
    return seconds, ran, skipped


def failed_checks(index):
    return sorted(e["labels"]["problem"] + "." + e["labels"]["candidate"]
                  for e in index["jobs"].values()
                  if e.get("labels", {}).get("stage") == "check" and e["state"] != "succeeded"
                  and e.get("attempts", 0) > 0)


def profiled(index):
    return {e["labels"]["problem"] + "." + e["labels"]["candidate"]: e
            for e in index["jobs"].values()
            if e.get("labels", {}).get("stage") == "profile" and e["state"] == "succeeded"}


def baseline(out):
    """(c): OUTDIR/c, or its parts OUTDIR/c1, c2, … as one index (their jobs together)."""
    whole = load(os.path.join(out, "c", "batch.json"))
    if whole is not None:
        return whole, ["c"]
    parts = sorted((name for name in os.listdir(out) if re.fullmatch(r"c[0-9]+", name)),
                   key=lambda name: int(name[1:]))
    jobs, found = {}, []
    for name in parts:
        index = load(os.path.join(out, name, "batch.json"))
        if index is not None:
            jobs.update(index["jobs"])
            found.append(name)
    return ({"jobs": jobs} if found else None), found


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: profile_once_report.py OUTDIR")
    out = sys.argv[1]
    indexes = {key: load(os.path.join(out, key, "batch.json")) for key in "ab"}
    indexes["c"], c_roots = baseline(out)
    missing = [key for key, index in indexes.items() if index is None]
    if missing:
        sys.exit(f"{out}: no batch.json for run(s) {', '.join(missing)}; run scripts/gpu-profile-once.sh first")
    wall = {}
    try:
        with open(os.path.join(out, "wall.tsv")) as f:
            for line in f:
                key, seconds = line.split()
                # The baseline's parts are one run.
                key = "c" if key in c_roots else key
                wall[key] = wall.get(key, 0.0) + float(seconds)
    except OSError:
        pass
    rows = {}
    print(f"{'run':<28} {'wall s':>7} {'check s':>8} {'time s':>8} {'profile s':>10} "
          f"{'time+prof':>10} {'prof ran':>9} {'skipped':>8}  cache")
    for key, name in RUNS:
        index = indexes[key]
        check = stage_seconds(index, "check")
        time = stage_seconds(index, "time")
        prof = stage_seconds(index, "profile")
        rows[key] = (time[0], prof[0])
        cache = index.get("profile_cache")
        if cache:
            text = (f"{cache['hits']} hits of {cache['fingerprints']} fingerprints "
                    f"({cache['hit_rate'] * 100:.1f} %), {cache['profiled']} profiled, "
                    f"saved {cache['saved_s']:.1f} s, audited {cache['audited']}, "
                    f"{cache['disagreements']} disagreed")
        else:
            text = "-"
        skipped = sum(1 for e in index["jobs"].values() if e["state"] == "skipped")
        print(f"{key} {name:<26} {wall.get(key, float('nan')):>7.1f} {check[0]:>8.1f} "
              f"{time[0]:>8.1f} {prof[0]:>10.1f} {time[0] + prof[0]:>10.1f} {prof[1]:>9} "
              f"{skipped:>8}  {text}")
        unfinished = sum(1 for e in index["jobs"].values() if e["state"] in ("pending", "running"))
        if unfinished:
            # A batch cut short (a time limit): its figures are of the jobs that ended.
            print(f"  ({key}) cut short: {unfinished} jobs did not end; its figures are of those that did")
    a, b, c = (sum(rows[k]) for k in "abc")
    print()
    print(f"GPU seconds, timing + counters: cascade+cache {a:.1f} s vs ncu every candidate "
          f"{c:.1f} s: {a / c if c else float('nan'):.3f}x (issue 25 asks at most 0.20x); "
          f"second run {b:.1f} s: {b / c if c else float('nan'):.3f}x")
    pa, pb, pc = rows["a"][1], rows["b"][1], rows["c"][1]
    print(f"profile stage: first run {pa:.1f} s, second run {pb:.1f} s "
          f"({pb / pa if pa else float('nan'):.3f}x of the first, "
          f"{pb / pc if pc else float('nan'):.3f}x of ncu every candidate's {pc:.1f} s)")
    # The verdicts: the same candidates fail the check in every run, and they are the ones
    # generated wrong.
    manifest = load(os.path.join(out, "gen", "manifest.json"))
    fails = {key: failed_checks(indexes[key]) for key in "abc"}
    # A baseline without a check stage has no check verdicts to compare.
    judged = "abc" if fails["c"] or stage_seconds(indexes["c"], "check")[1] else "ab"
    same = all(fails[key] == fails["a"] for key in judged)
    line = f"check verdicts: {len(fails['a'])} candidates failed the check in (a)"
    others = " and ".join(f"({key})" for key in judged[1:])
    line += f", the same in {others}" if same else ", " + ", ".join(
        f"({key}) {len(fails[key])}" for key in judged[1:]) + ": DIFFERENT"
    if manifest:
        wrong = sorted(m["problem"] + "." + m["candidate"] for m in manifest["candidates"]
                       if m["expect"] == "incorrect")
        line += "; as generated" if wrong == fails["a"] else f"; generated wrong: {len(wrong)}: DIFFERENT"
        slow = {m["problem"] + "." + m["candidate"] for m in manifest["candidates"]
                if m["expect"] == "slow"}
        slow_profiled = slow & set(profiled(indexes["a"]))
        line += f"; far slower ones profiled by the cascade: {len(slow_profiled)} of {len(slow)}"
    print(line)
    # Kernel time of the candidates profiled in both (a) and (c): cached records against fresh.
    pa_jobs, pc_jobs = profiled(indexes["a"]), profiled(indexes["c"])
    ratios = [pa_jobs[k]["total_kernel_ns"] / pc_jobs[k]["total_kernel_ns"]
              for k in pa_jobs.keys() & pc_jobs.keys()
              if pa_jobs[k].get("total_kernel_ns") and pc_jobs[k].get("total_kernel_ns")]
    if ratios:
        dev = sorted(abs(r - 1.0) for r in ratios)
        print(f"kernel time of {len(ratios)} candidates profiled in (a) and (c): median "
              f"|a/c - 1| {statistics.median(dev) * 100:.1f} %, max {dev[-1] * 100:.1f} %")
    for key in "ab":
        cache = indexes[key].get("profile_cache") or {}
        for d in cache.get("disagreed", [])[:10]:
            print(f"  ({key}) disagreement: {d['job']}: {d['kernel']} cached {d['cached_ns']:.0f} ns, "
                  f"measured {d['measured_ns']:.0f} ns (tolerance {d['tolerance'] * 100:.0f} %)")


if __name__ == "__main__":
    main()
