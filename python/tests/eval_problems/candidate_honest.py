"""An honest candidate (no get_init_inputs, as KernelBench candidates): another formulation of
the same math, printing to stdout and writing to fd 1 all along (the protocol must not care)."""

import os

import numpy as np

print("candidate module imported")


class ModelNew:
    def __init__(self, features, scale):
        print("building ModelNew", features, scale)
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def __call__(self, x):
        print("calling on", x.shape)
        os.write(1, b"a raw write to fd 1\n")
        y = np.einsum("bi,ij->bj", x, self.weight)
        return (np.tanh(y) * self.scale).astype(np.float32)
