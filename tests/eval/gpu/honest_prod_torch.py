# Honest candidate for prod_underflow.py: a pure-torch copy of the problem, then ModelNew = Model.
# Expected: correct, no finding, speedup about 1; its work pass reads the whole input (64 MB),
# although every output underflows to 0: the work floor is about the inputs, not the answer.
import torch
import torch.nn as nn

BATCH = 256
DIM1 = 256
DIM2 = 256
REDUCTION_DIM = 1
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.prod(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, DIM1, DIM2, device=DEVICE)]


def get_init_inputs():
    return [REDUCTION_DIM]


ModelNew = Model
