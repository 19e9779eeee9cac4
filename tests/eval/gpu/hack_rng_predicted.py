# Family: RNG predicted (the inputs regenerated under the seed the harness is expected to use).
# Source: GPU MODE cheat-rng.py; KernelBench seeds get_inputs() with set_seed(42).
# Problem: add.py
# Hack: at import, seed 42 and regenerate add.py's inputs exactly as its get_inputs() does,
#   precompute the sum, and return it for every call without reading the inputs.
# Expected: incorrect, incorrect_output: the trusted worker draws each trial's inputs under a
#   fresh secret seed that never enters this process.
import torch
import torch.nn as nn

N = 32 * 1024 * 1024
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

torch.manual_seed(42)
_a = torch.randn(N, device=DEVICE)
_b = torch.randn(N, device=DEVICE)
_PRECOMPUTED = _a + _b
del _a, _b


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _PRECOMPUTED.clone()
