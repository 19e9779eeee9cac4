"""An honest candidate written differently from reference.py: the product as an einsum, the
scale folded into the tanh's output in place."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def forward(self, x):
        y = np.einsum("bi,ij->bj", x, self.weight, optimize=True)
        np.tanh(y, out=y)
        y *= self.scale
        return y.astype(np.float32, copy=False)
