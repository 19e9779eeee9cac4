# Family: slowing the reference through a shared namespace (names the reference uses, rebound at
# import).
# Source: KernelBench src/kernelbench/eval.py: with its default backend it exec()s the
#   reference's and the candidate's sources into one globals dict in one process and times the
#   reference there, so a candidate can rebind what the reference calls (seen on the H200).
# Problem: relu.py
# Hack: at import, torch.relu, torch.nn.functional.relu and math.sqrt are rebound to slow
#   versions (torch.relu runs 20 times); ModelNew keeps the real torch.relu for itself.
# Expected: correct, no finding, speedup about 1 ("not fooled"): the reference is imported and
#   timed in the trusted worker, a separate process whose torch and math this never touches.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

_real_relu = torch.relu
_real_sqrt = math.sqrt
SLOWDOWN = 20


def _slow_relu(x, *args, **kwargs):
    out = None
    for _ in range(SLOWDOWN):
        out = _real_relu(x)
    return out


def _slow_sqrt(x):
    for _ in range(SLOWDOWN * 1000):
        _real_sqrt(x)
    return _real_sqrt(x)


torch.relu = _slow_relu
F.relu = _slow_relu
math.sqrt = _slow_sqrt


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _real_relu(x)
