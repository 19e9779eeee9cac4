#!/usr/bin/env python3
"""Check a polyprof wheel's metadata and contents (python/build-wheel.sh builds it).

Usage: scripts/check-wheel.py WHEEL [--max-mb N] [--max-glibc X.Y]

Fails (exit 1, each problem on a line) unless the wheel has: the README as a Markdown long
description, the project URLs, the license expression and both license files, the `polyprof`
and `polyprof-supervise` executables stripped of their symbol tables, and, with --max-mb, at most
N MB. A Linux wheel must be tagged manylinux, and every ELF file in it (the extension and the
executables) may need no glibc symbol version (GLIBC_x.y, read from its .gnu.version_r section)
above the glibc of any of its manylinux tags: pip trusts the tag, the loader the symbols. With
--max-glibc, its tags may name no glibc above X.Y (2.28: RHEL/Rocky 8, most cluster nodes).
"""

from __future__ import annotations

import argparse
import email.parser
import os
import re
import sys
import zipfile

# The manylinux tags that predate PEP 600's manylinux_x_y, as the glibc they stand for.
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def is_elf(data: bytes) -> bool:
    """A 64-bit little-endian ELF file (what this script reads)."""
    return data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1


def u(elf: bytes, at: int, size: int) -> int:
    return int.from_bytes(elf[at : at + size], "little")


def section_headers(elf: bytes) -> list[tuple[str, int, int, int, int]]:
    """(name, type, offset, size, link) of each section (what `readelf -S` lists)."""
    if not is_elf(elf):
        return []
    shoff, shentsize, shnum, shstrndx = (
        u(elf, 0x28, 8),
        u(elf, 0x3A, 2),
        u(elf, 0x3C, 2),
        u(elf, 0x3E, 2),
    )

    def header(i: int) -> tuple[int, int, int, int, int]:
        base = shoff + i * shentsize
        # sh_name, sh_type, sh_offset, sh_size, sh_link
        return (
            u(elf, base, 4),
            u(elf, base + 4, 4),
            u(elf, base + 0x18, 8),
            u(elf, base + 0x20, 8),
            u(elf, base + 0x28, 4),
        )

    _, _, str_off, str_size, _ = header(shstrndx)
    table = elf[str_off : str_off + str_size]
    out = []
    for i in range(shnum):
        name, kind, offset, size, link = header(i)
        out.append((table[name : table.index(b"\0", name)].decode(), kind, offset, size, link))
    return out


def sections(elf: bytes) -> list[str]:
    """The section names of a 64-bit little-endian ELF file."""
    return [name for name, *_ in section_headers(elf)]


def glibc_needed(elf: bytes) -> tuple[int, int] | None:
    """The highest GLIBC_x.y symbol version `elf` needs (its SHT_GNU_verneed entries, what
    `readelf -V` lists under .gnu.version_r), or None when it needs none."""
    headers = section_headers(elf)
    highest = None
    for _, kind, offset, _, link in headers:
        if kind != 0x6FFFFFFE:  # SHT_GNU_verneed
            continue
        _, _, str_off, str_size, _ = headers[link]
        strings = elf[str_off : str_off + str_size]
        need = offset
        while True:
            count, aux, next_need = u(elf, need + 2, 2), u(elf, need + 8, 4), u(elf, need + 12, 4)
            entry = need + aux
            for _ in range(count):
                name_at, next_aux = u(elf, entry + 8, 4), u(elf, entry + 12, 4)
                name = strings[name_at : strings.index(b"\0", name_at)].decode()
                version = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", name)
                if version:
                    found = (int(version[1]), int(version[2]))
                    highest = found if highest is None else max(highest, found)
                if next_aux == 0:
                    break
                entry += next_aux
            if next_need == 0:
                break
            need += next_need
    return highest


def manylinux_glibc(tag: str) -> tuple[int, int] | None:
    """The glibc a platform tag promises (`manylinux_2_28_x86_64`, `manylinux2014_x86_64`)."""
    pep600 = re.match(r"manylinux_(\d+)_(\d+)_", tag)
    if pep600:
        return int(pep600[1]), int(pep600[2])
    legacy = tag.split("_", 1)[0]
    return LEGACY_MANYLINUX.get(legacy)


def glibc_problems(
    wheel: zipfile.ZipFile, tags: list[str], max_glibc: tuple[int, int] | None
) -> list[str]:
    """The tag and symbol-version problems of a Linux wheel (see the module's docstring)."""
    platforms = sorted({tag.split("-")[-1] for tag in tags})
    if not any(p.startswith(("linux", "manylinux", "musllinux")) for p in platforms):
        return []  # macOS or Windows: no glibc
    problems = []
    promised = {p: manylinux_glibc(p) for p in platforms if p.startswith("manylinux")}
    if not promised:
        return [f"tagged {', '.join(platforms)}: not manylinux, so pip installs it nowhere else"]
    floor = min(v for v in promised.values() if v is not None)
    for platform, glibc in promised.items():
        if max_glibc is not None and glibc is not None and glibc > max_glibc:
            problems.append(
                f"tagged {platform}: needs glibc {fmt(glibc)}, more than {fmt(max_glibc)}"
            )
    for name in wheel.namelist():
        data = wheel.read(name)
        if not is_elf(data):
            continue
        needed = glibc_needed(data)
        print(f"  {name}: needs glibc {fmt(needed) if needed else '(none)'}")
        if needed is not None and needed > floor:
            problems.append(f"{name} needs GLIBC_{fmt(needed)}, above the tag's glibc {fmt(floor)}")
    return problems


def fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def check(path: str, max_mb: float | None, max_glibc: tuple[int, int] | None = None) -> list[str]:
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
        wheel_name = next((f for f in files if f.endswith(".dist-info/WHEEL")), None)
        wheel_meta = (
            email.parser.Parser().parsestr(wheel.read(wheel_name).decode()) if wheel_name else None
        )
        tags = (wheel_meta.get_all("Tag") if wheel_meta else None) or []
        if not tags:
            problems.append("no Tag in the .dist-info/WHEEL file")
        problems += glibc_problems(wheel, tags, max_glibc)
    size_mb = os.path.getsize(path) / 1e6
    print(f"{os.path.basename(path)}: {size_mb:.1f} MB, {len(files)} files")
    if max_mb is not None and size_mb > max_mb:
        problems.append(f"the wheel is {size_mb:.1f} MB, more than {max_mb} MB")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel")
    parser.add_argument("--max-mb", type=float)
    parser.add_argument("--max-glibc", help="the highest glibc a manylinux tag may name (X.Y)")
    args = parser.parse_args()
    max_glibc = None
    if args.max_glibc is not None:
        parts = re.fullmatch(r"(\d+)\.(\d+)", args.max_glibc)
        if parts is None:
            parser.error(f"--max-glibc {args.max_glibc!r} is not X.Y (2.28)")
        max_glibc = (int(parts[1]), int(parts[2]))
    problems = check(args.wheel, args.max_mb, max_glibc)
    for problem in problems:
        print(f"check-wheel: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
