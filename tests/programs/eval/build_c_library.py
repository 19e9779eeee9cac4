"""An honest candidate for reference.py that builds a C shared library at import (`cc`, then
ctypes), cached in its build folder (POLYPROF_BUILD_DIR) as torch caches an inline extension:
the build stage compiles it, the judged worker finds it there and only loads it. Its tanh and
scale run in C on the numpy result of the product."""

import ctypes
import os
import subprocess
import sys

import numpy as np

BUILD = os.environ.get("POLYPROF_BUILD_DIR") or os.environ.get("TMPDIR", "/tmp")
LIBRARY = os.path.join(BUILD, "libtanhscale.so")
BUILD_DELAY_S = 0.0
C_SOURCE = r"""
#include <math.h>
void tanh_scale(float *y, long n, float scale) {
    for (long i = 0; i < n; i++) y[i] = tanhf(y[i]) * scale;
}
"""

# What devices this import could see (the build worker's must be none), for the tests.
print("VISIBLE-DEVICES " + repr(os.environ.get("CUDA_VISIBLE_DEVICES")), file=sys.stderr, flush=True)

if not os.path.exists(LIBRARY):
    source = os.path.join(BUILD, "tanhscale.c")
    with open(source, "w") as f:
        f.write(C_SOURCE)
    # Slow on purpose when set above 0 (scripts/bench-eval-throughput.sh rewrites it: its
    # slow-to-build candidates).
    if BUILD_DELAY_S > 0:
        import time

        time.sleep(BUILD_DELAY_S)
    subprocess.run(
        [os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", LIBRARY, source, "-lm"],
        check=True,
    )
_lib = ctypes.CDLL(LIBRARY)
_lib.tanh_scale.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_float]
_lib.tanh_scale.restype = None


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = float(scale)

    def forward(self, x):
        y = np.ascontiguousarray(x @ self.weight, dtype=np.float32)
        _lib.tanh_scale(y.ctypes.data, y.size, self.scale)
        return y
