# Honest candidate for add.py: a pure-torch copy of the problem, then ModelNew = Model.
# Expected: correct, no finding, speedup about 1.
import torch
import torch.nn as nn

N = 32 * 1024 * 1024
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def get_inputs():
    return [torch.randn(N, device=DEVICE), torch.randn(N, device=DEVICE)]


def get_init_inputs():
    return []


ModelNew = Model
