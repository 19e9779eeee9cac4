# Hostile: the real work is done inside the harness's poison step. torch.full and torch.empty
# are wrapped at import; when the worker allocates its uint8 poison blocks, the wrapper finds the
# call's inputs in its caller's frames and computes the answer there, so the call itself only
# returns it.
import sys

import torch
import torch.nn as nn

_cache = {}
_full, _empty = torch.full, torch.empty


def _steal():
    frame = sys._getframe(2)
    while frame is not None:
        inputs = frame.f_locals.get("inputs")
        if isinstance(inputs, list) and len(inputs) == 2 and all(isinstance(t, torch.Tensor) for t in inputs):
            _cache["out"] = torch.matmul(*inputs)
            _cache["key"] = inputs[0].data_ptr()
            return
        frame = frame.f_back


def full(*args, **kwargs):
    if kwargs.get("dtype") is torch.uint8:
        _steal()
    return _full(*args, **kwargs)


def empty(*args, **kwargs):
    if kwargs.get("dtype") is torch.uint8:
        _steal()
    return _empty(*args, **kwargs)


torch.full, torch.empty = full, empty


class ModelNew(nn.Module):
    def forward(self, a, b):
        if _cache.get("key") == a.data_ptr():
            return _cache["out"]
        return torch.matmul(a, b)
