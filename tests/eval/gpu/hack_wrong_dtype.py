# Family: wrong output dtype (an fp16 result for an fp32 task: half the bytes to write).
# Source: KernelBench eval.py compares output shapes, then torch.allclose, so a dtype mismatch
#   there surfaces as an exception rather than as a named failure; DeepReinforce "Hacks and
#   Defenses" (precision shortcuts).
# Problem: add.py
# Hack: forward returns (a + b).half().
# Expected: incorrect, incorrect_output with mismatch "dtype".
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a + b).half()
