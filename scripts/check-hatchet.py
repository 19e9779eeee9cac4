#!/usr/bin/env python3
"""Check a polyprof Hatchet export with llnl-hatchet (pip install llnl-hatchet).

    scripts/check-hatchet.py FILE [--total 'time (ns)=782208'] ...

Loads FILE with hatchet.GraphFrame.from_literal and checks:
  - every metric key of every node is a registered metric column (exclusive, or inclusive
    when it contains "(inc)"), i.e. the root registers them all;
  - every exclusive metric has an inclusive twin "<m> (inc)" and vice versa;
  - every frame has a name and a type;
  - the inclusive values equal what Hatchet itself recomputes from the exclusive ones
    (update_inclusive_columns), so nothing is counted twice;
  - the root's inclusive value of each metric equals the sum of the exclusive column;
  - each --total NAME=VALUE: the root's inclusive NAME equals VALUE (relative 1e-9);
  - with --minus OTHER: hatchet's `gf - other` (this file minus OTHER, another run of the same
    program) has no NaN row, i.e. both runs have the same frames.
Exit 0 when all hold, 1 on a failed check (each printed), 2 when hatchet is missing or the
file cannot be read.
"""
import argparse
import json
import math
import sys


def close(a, b):
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-6)


def node_keys(node, keys):
    keys.update(node["metrics"].keys())
    for child in node.get("children", []):
        node_keys(child, keys)


def frames_ok(node, failures, path=()):
    frame = node.get("frame", {})
    here = path + (str(frame.get("name")),)
    if not frame.get("name") or not frame.get("type"):
        failures.append(f"frame without name or type at {' / '.join(here)}: {frame}")
    for child in node.get("children", []):
        frames_ok(child, failures, here)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--total", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--minus", metavar="OTHER", help="another run's export: gf - other has no NaN row")
    args = parser.parse_args()
    try:
        import hatchet  # noqa: F401
        from hatchet import GraphFrame
    except ImportError:
        print("check-hatchet: llnl-hatchet is not installed (pip install llnl-hatchet)", file=sys.stderr)
        return 2
    try:
        with open(args.file, encoding="utf-8") as handle:
            literal = json.load(handle)
    except (OSError, ValueError) as error:
        print(f"check-hatchet: cannot read {args.file}: {error}", file=sys.stderr)
        return 2

    failures = []
    if not isinstance(literal, list) or len(literal) != 1:
        failures.append("expected a list with exactly one root")
    keys = set()
    # Before loading: Hatchet fills a missing frame type with "None" in place.
    for root in literal:
        node_keys(root, keys)
        frames_ok(root, failures)
    gf = GraphFrame.from_literal(literal)
    exc, inc = set(gf.exc_metrics), set(gf.inc_metrics)
    unregistered = keys - exc - inc
    if unregistered:
        failures.append(f"metrics not registered by the root: {sorted(unregistered)}")
    for metric in exc:
        if f"{metric} (inc)" not in inc:
            failures.append(f"exclusive metric {metric!r} has no inclusive twin")
    for metric in inc:
        if metric[: -len(" (inc)")] not in exc:
            failures.append(f"inclusive metric {metric!r} has no exclusive twin")

    df = gf.dataframe
    root_node = gf.graph.roots[0]
    # Hatchet recomputes inclusive values from the exclusive ones; ours must agree.
    recomputed = gf.deepcopy()
    recomputed.dataframe = recomputed.dataframe.drop(columns=sorted(inc))
    recomputed.inc_metrics = []
    recomputed.update_inclusive_columns()
    for metric in sorted(inc):
        ours, theirs = df[metric], recomputed.dataframe[metric]
        for node in df.index:
            if not close(ours[node], theirs[node]):
                failures.append(
                    f"{metric} at {node.frame.get('name')}: file {ours[node]} != hatchet {theirs[node]}"
                )
        base = metric[: -len(" (inc)")]
        if base in df and not close(df[metric][root_node], df[base].sum()):
            failures.append(f"root {metric} {df[metric][root_node]} != sum of {base} {df[base].sum()}")

    for spec in args.total:
        name, _, value = spec.rpartition("=")
        column = f"{name} (inc)"
        if column not in df:
            failures.append(f"--total {spec}: no column {column!r}")
        elif not close(df[column][root_node], value):
            failures.append(f"root {column} is {df[column][root_node]}, expected {value}")

    if args.minus:
        try:
            with open(args.minus, encoding="utf-8") as handle:
                other = GraphFrame.from_literal(json.load(handle))
        except (OSError, ValueError) as error:
            print(f"check-hatchet: cannot read {args.minus}: {error}", file=sys.stderr)
            return 2
        diff = gf - other
        columns = [c for c in diff.exc_metrics + diff.inc_metrics if c in diff.dataframe]
        nan_rows = diff.dataframe[columns].isna().any(axis=1)
        for node in diff.dataframe.index[nan_rows]:
            failures.append(f"gf - other: NaN row at {node.frame.get('name')} (a frame only one run has)")
        print(f"check-hatchet: gf - other: {len(diff.dataframe)} rows, {int(nan_rows.sum())} with NaN")

    for failure in failures:
        print(f"check-hatchet: FAIL {failure}")
    if failures:
        return 1
    print(
        f"check-hatchet: ok: {len(df)} nodes, exclusive {sorted(exc)}, "
        f"{len(inc)} inclusive columns, root totals match"
    )
    print(gf.tree(metric_column="time (ns) (inc)" if "time (ns) (inc)" in inc else None, depth=6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
