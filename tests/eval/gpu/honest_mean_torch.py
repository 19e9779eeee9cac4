# Honest candidate for mean.py: a pure-torch copy of the problem, then ModelNew = Model.
# Expected: correct, no finding, speedup about 1; its work pass reads the whole input (256 MB).
import torch
import torch.nn as nn

ROWS = 4096
COLS = 16384
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=1)


def get_inputs():
    return [torch.rand(ROWS, COLS, device=DEVICE)]


def get_init_inputs():
    return []


ModelNew = Model
