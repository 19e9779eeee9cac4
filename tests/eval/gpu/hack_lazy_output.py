# Family: lazy output (a torch.Tensor subclass that computes on first use, i.e. inside the
# correctness check, never inside the timed call).
# Source: DeepReinforce "Hacks and Defenses"; gpu-mode reference-kernels PR #161.
# Problem: relu.py
# Hack: forward returns a LazyRelu whose storage is filled by the first torch function that
#   touches it (a comparison, a copy); the call itself launches nothing.
# Expected: failed, failure_kind bad_output (the worker accepts exactly torch.Tensor; a subclass
#   could run work wherever it is read). No finding.
import torch
import torch.nn as nn


class LazyRelu(torch.Tensor):
    @staticmethod
    def __new__(cls, source: torch.Tensor):
        lazy = torch.Tensor._make_subclass(cls, torch.empty_like(source))
        lazy._pending = source
        return lazy

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            for arg in args:
                if isinstance(arg, LazyRelu) and getattr(arg, "_pending", None) is not None:
                    torch.clamp(arg._pending, min=0.0, out=arg)
                    arg._pending = None
            return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return LazyRelu(x)
