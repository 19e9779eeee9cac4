# Family: inputs modified (the candidate overwrites its inputs after computing).
# Source: KernelBench src/kernelbench/unit_tests/test_kernels/zero_out_kernel.py; GPU MODE
#   cheat-input.py.
# Problem: add.py
# Hack: forward computes a + b correctly, then zeroes a and b in place (a harness that computes
#   the reference afterwards on the same tensors would then compare against 0 + 0).
# Expected: inputs_modified (the trusted worker compares the handed-out inputs with its pristine
#   copy, byte for byte). The first correctness call is right; later calls on the same (zeroed)
#   inputs return zeros, so timed_output_incorrect and status incorrect are likely.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = a + b
        a.zero_()
        b.zero_()
        return out
