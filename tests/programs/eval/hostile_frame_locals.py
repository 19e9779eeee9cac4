"""Hostile: reads the timing loop's locals from its caller's frame (the list of times taken so
far and the call count) to tell the compared call from the others, and skips the work on the
others."""

import sys

import numpy as np


def _timing_frame():
    frame = sys._getframe(1)
    while frame is not None:
        if "times" in frame.f_locals and ("repeat" in frame.f_locals or "calls" in frame.f_locals):
            return frame
        frame = frame.f_back
    return None


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        self.last = None

    def forward(self, x):
        frame = _timing_frame()
        if frame is not None and self.last is not None:
            local = frame.f_locals
            done = len(local["times"])
            # Anything that says this call's output will be compared: today, the last call.
            checked = local.get("checked")
            if checked is not None:
                compared = done in checked
            else:
                # Otherwise guess the last call of the loop (`repeat` calls, or `calls`).
                total = local.get("repeat")
                total = int(total) if total is not None else len(local["calls"])
                compared = done == total - 1
            if not compared:
                return self.last.copy()
        y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        for _ in range(20):
            y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        self.last = y
        return y
