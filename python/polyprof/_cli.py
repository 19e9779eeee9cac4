"""The ``polyprof`` console script: runs the Rust executable shipped inside the package
(``polyprof/bin/polyprof``), replacing this Python process so signals, exit codes and the
supervisor's process tree are the executable's own."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def executable() -> str:
    bundled = Path(__file__).with_name("bin") / "polyprof"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    found = shutil.which("polyprof-native") or None
    if found:
        return found
    sys.stderr.write(
        "polyprof: the command-line executable is not in this installation "
        f"(looked for {bundled}); build the package with python/build-wheel.sh, or "
        "`cargo install --path .` for the executable alone\n"
    )
    raise SystemExit(3)


def main() -> None:
    exe = executable()
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
