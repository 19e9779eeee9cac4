#!/usr/bin/env python3
"""Check a polyprof wheel's metadata and contents (python/build-wheel.sh builds it).

Usage: scripts/check-wheel.py WHEEL [--max-mb N]

Fails (exit 1, each problem on a line) unless the wheel has: the README as a Markdown long
description, the project URLs, the license expression and both license files, the `polyprof`
and `polyprof-supervise` executables stripped of their symbol tables, and, with --max-mb, at most
N MB.
"""

from __future__ import annotations

import argparse
import email.parser
import os
import sys
import zipfile


def sections(elf: bytes) -> list[str]:
    """The section names of a 64-bit little-endian ELF file (what `readelf -S` lists)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return []
    shoff = int.from_bytes(elf[0x28:0x30], "little")
    shentsize = int.from_bytes(elf[0x3A:0x3C], "little")
    shnum = int.from_bytes(elf[0x3C:0x3E], "little")
    shstrndx = int.from_bytes(elf[0x3E:0x40], "little")

    def header(i: int) -> tuple[int, int, int]:
        base = shoff + i * shentsize
        name = int.from_bytes(elf[base : base + 4], "little")
        offset = int.from_bytes(elf[base + 0x18 : base + 0x20], "little")
        size = int.from_bytes(elf[base + 0x20 : base + 0x28], "little")
        return name, offset, size

    _, str_off, str_size = header(shstrndx)
    table = elf[str_off : str_off + str_size]
    names = []
    for i in range(shnum):
        name, _, _ = header(i)
        names.append(table[name : table.index(b"\0", name)].decode())
    return names


def check(path: str, max_mb: float | None) -> list[str]:
    problems = []
    with zipfile.ZipFile(path) as wheel:
        files = wheel.namelist()
        meta_name = next((f for f in files if f.endswith(".dist-info/METADATA")), None)
        if meta_name is None:
            return [f"{path}: no .dist-info/METADATA"]
        meta = email.parser.Parser().parsestr(wheel.read(meta_name).decode())
        if not meta.get("Description-Content-Type", "").startswith("text/markdown"):
            problems.append("Description-Content-Type is not text/markdown (readme missing?)")
        if "# polyprof" not in (meta.get_payload() or ""):
            problems.append("the long description is not the README")
        urls = meta.get_all("Project-URL") or []
        for label in ("Homepage", "Repository", "Documentation"):
            if not any(u.startswith(label + ",") for u in urls):
                problems.append(f"no Project-URL {label}")
        if meta.get("License-Expression") != "MIT OR Apache-2.0":
            problems.append(f"License-Expression is {meta.get('License-Expression')!r}")
        for license_file in ("LICENSE-MIT", "LICENSE-APACHE"):
            if license_file not in (meta.get_all("License-File") or []):
                problems.append(f"no License-File {license_file}")
            if not any(f.endswith(f".dist-info/licenses/{license_file}") for f in files):
                problems.append(f"{license_file} is not in the wheel's dist-info/licenses")
        for exe in ("polyprof/bin/polyprof", "polyprof/bin/polyprof-supervise"):
            if exe not in files:
                problems.append(f"{exe} is missing")
                continue
            names = sections(wheel.read(exe))
            if ".symtab" in names or ".debug_info" in names:
                problems.append(f"{exe} is not stripped (it has a symbol table or debug info)")
    size_mb = os.path.getsize(path) / 1e6
    print(f"{os.path.basename(path)}: {size_mb:.1f} MB, {len(files)} files")
    if max_mb is not None and size_mb > max_mb:
        problems.append(f"the wheel is {size_mb:.1f} MB, more than {max_mb} MB")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel")
    parser.add_argument("--max-mb", type=float)
    args = parser.parse_args()
    problems = check(args.wheel, args.max_mb)
    for problem in problems:
        print(f"check-wheel: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
