"""Plain numpy callables for test_eval.py: a reference function, its inputs, an honest
candidate function and a wrong one."""

import numpy as np


def reference(x, y):
    return (x * y + 1.0).astype(np.float32)


def inputs():
    return [np.random.randn(64).astype(np.float32), np.random.randn(64).astype(np.float32)]


def candidate(x, y):
    out = np.empty_like(x)
    np.multiply(x, y, out=out)
    out += 1.0
    return out


def wrong(x, y):
    return (x + y).astype(np.float32)
