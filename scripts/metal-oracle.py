#!/usr/bin/env python3
"""Golden numbers from metal-profiler 0.1.1 (pip install metal-profiler==0.1.1) for the
applegpu listings in tests/fixtures/metal. Writes one JSON per listing to
tests/fixtures/metal/oracle/. tests/metal_oracle.rs compares polyprof's compatible parts
against these files.

Usage: python3 scripts/metal-oracle.py [FIXTURE_DIR]
"""
import json
import pathlib
import sys

from metal_profiler import profiler
from metal_profiler.cost_model import occupancy_for_regs


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/metal")
    out_dir = root / "oracle"
    out_dir.mkdir(exist_ok=True)
    for path in sorted(root.glob("*.asm")):
        insts = profiler.parse_disassembly(path.read_text())
        result = profiler.analyze(insts)
        doc = {
            "tool": "metal-profiler 0.1.1",
            "listing": path.name,
            "total_instructions": result.total_instructions,
            "instructions": [
                {"offset": i.offset, "raw_bytes": i.raw_bytes, "mnemonic": i.mnemonic,
                 "operands": i.operands, "unit": i.cost.unit.name,
                 "throughput": i.cost.throughput, "wait_cycles": i.wait_cycles,
                 "defs": i.defs, "uses": i.uses}
                for i in insts
            ],
            "f32_cycles": result.f32_cycles,
            "f16_cycles": result.f16_cycles,
            "scib_cycles": result.scib_cycles,
            "ic_cycles": result.ic_cycles,
            "mem_ops": result.mem_ops,
            "ctrl_ops": result.ctrl_ops,
            "total_wait_cycles": result.total_wait_cycles,
            "max_reg": result.max_reg,
            "loops": [
                {"start": l.start_offset, "end": l.end_offset,
                 "body_instructions": len(l.body_instructions)}
                for l in result.loops
            ],
        }
        (out_dir / (path.stem + ".json")).write_text(json.dumps(doc, indent=1) + "\n")
    table = {str(h): occupancy_for_regs(h)[0] for h in range(0, 257)}
    (out_dir / "occupancy_for_regs.json").write_text(json.dumps(table, indent=0) + "\n")


if __name__ == "__main__":
    main()
