"""Per-call GPU time of a capture's timing blocks, read from the tracer's records by the rule of
src/eval/timeline.rs (a call is what ran between its call marks; its time the union of those
intervals), and ncu's gpu__time_duration per profiled call, for scripts/bench-eval.sh.

    python3 timeline_time.py TRACE_CAPTURE_DIR NCU_CAPTURE_DIR           -> one JSON line
    python3 timeline_time.py TRACE_CAPTURE_DIR NCU_CAPTURE_DIR --row NAME -> one table row
"""
import csv
import glob
import json
import statistics
import sys


def traced_ms(capture):
    requests = json.load(open(f"{capture}/requests.json"))["requests"]
    memsets = []
    kernels = []
    for path in glob.glob(f"{capture}/trace/trace-*.tsv"):
        for line in open(path):
            f = line.rstrip("\n").split("\t")
            if f[0] == "S" and f[7] == "0":
                memsets.append((int(f[2]), int(f[3]), int(f[6])))
            if f[0] in "KCS":
                kernels.append((int(f[2]), int(f[3]), f[0], f[6] if f[0] == "S" else ""))
    marks = set()
    for r in requests:
        if r.get("marks"):
            marks.update(r["marks"].values())
    work = [(s, e) for s, e, kind, b in kernels if not (kind == "S" and int(b) in marks)]
    work.sort()
    per_block = []
    for r in requests:
        if r["op"] != "time":
            continue
        m = r["marks"]
        opens = sorted(x for x in memsets if x[2] == m["call_open"])
        closes = sorted(x for x in memsets if x[2] == m["call_close"])
        calls = []
        for o, c in zip(opens, closes):
            lo, hi = o[1], c[0]
            spans = [(s, e) for s, e in work if s >= lo and e <= hi]
            busy, cur = 0, None
            for s, e in spans:
                if cur and s <= cur[1]:
                    cur = (cur[0], max(cur[1], e))
                else:
                    if cur:
                        busy += cur[1] - cur[0]
                    cur = (s, e)
            busy += (cur[1] - cur[0]) if cur else 0
            calls.append(busy / 1e6)
        per_block.append(statistics.median(calls) if calls else 0.0)
    return statistics.median(per_block) if per_block else 0.0


def ncu_ms(capture):
    rows = [l for l in open(f"{capture}/ncu.csv") if l.startswith('"')]
    per_call = {}
    for row in csv.DictReader(rows):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        key = row.get("thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg", "")
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "nsecond": 1e-6, "ms": 1.0, "msecond": 1.0}.get(row["Metric Unit"], 1e-6)
        per_call[key] = per_call.get(key, 0.0) + value * scale
    return statistics.median(per_call.values()) if per_call else 0.0, len(per_call)


if __name__ == "__main__":
    t = traced_ms(sys.argv[1])
    n, calls = ncu_ms(sys.argv[2])
    ratio = t / n if n else None
    if len(sys.argv) > 4 and sys.argv[3] == "--row":
        if ratio is None:
            verdict = "n/a (ncu profiled nothing)"
        elif n < 0.010:
            verdict = "n/a (under 10 us)"
        else:
            verdict = "yes" if abs(ratio - 1) <= 0.03 else "NO"
        print(f"{sys.argv[4]:<24} {t:10.4f} {n:10.4f} {ratio if ratio is not None else float('nan'):12.4f} {verdict}")
    else:
        print(json.dumps({"traced_ms": t, "ncu_ms": n, "ncu_calls": calls, "traced_over_ncu": ratio}))
