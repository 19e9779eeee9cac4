"""Hostile: counts its calls to tell which ones are compared. Before this issue's fix, a
timing block's last timed call was the only one checked, and the request (which a candidate can
read from its caller's frame) said how many calls a block makes; every other timed call returns
the previous answer without computing."""

import sys

import numpy as np


def _block_request():
    """The `time` request the worker is serving, found in a caller's frame."""
    frame = sys._getframe(1)
    while frame is not None:
        header = frame.f_locals.get("header")
        if isinstance(header, dict) and header.get("op") in ("time", "call", "warmup"):
            return header
        frame = frame.f_back
    return None


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        self.calls_in_block = 0
        self.block = None
        self.last = None

    def forward(self, x):
        header = _block_request()
        if header is None or header.get("op") != "time":
            self.block = None
            return self.honest(x)
        if self.block is not header:
            self.block, self.calls_in_block = header, 0
        self.calls_in_block += 1
        timed = self.calls_in_block - int(header.get("warmup", 0))
        if timed == int(header.get("repeat", 0)) or self.last is None:
            return self.honest(x)  # the call that is compared
        return self.last.copy()

    def honest(self, x):
        y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        for _ in range(20):
            y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        self.last = y
        return y
