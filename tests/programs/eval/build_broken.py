"""A candidate whose build fails: at import it compiles a broken C file in its build folder
(POLYPROF_BUILD_DIR) with `cc`, as an inline extension's build would, and raises with the
compiler's output. The build stage must fail it with that log, before any judged turn."""

import os
import subprocess

BUILD = os.environ.get("POLYPROF_BUILD_DIR") or os.environ.get("TMPDIR", "/tmp")
SOURCE = os.path.join(BUILD, "broken.c")
with open(SOURCE, "w") as f:
    f.write("int scale(float *y, int n) { return undeclared_symbol_of_the_broken_build; }\n")
compiled = subprocess.run(
    [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", os.path.join(BUILD, "broken.so"), SOURCE],
    capture_output=True,
    text=True,
)
if compiled.returncode != 0:
    raise RuntimeError("Error building extension 'broken':\n" + compiled.stderr)


class ModelNew:
    def __init__(self, features, scale):
        pass

    def forward(self, x):
        return x
