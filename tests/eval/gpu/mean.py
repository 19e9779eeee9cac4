# Problem: mean over each row of a 4096 x 16384 fp32 matrix of uniform [0, 1) draws (256 MB in,
# 16 KB out: ~0.1 ms on an H200, bound by reading the input). The operation of KernelBench's
# level1/48_Mean_reduction_over_a_dimension, on uniform inputs. Every row's mean is 0.5 within
# about 0.01 (its standard deviation is 0.29 / 128 = 0.0023), inside the default tolerance
# (atol + rtol*|ref| = 0.015): a kernel that skips work passes correctness here, which is what
# hack_half_input.py, hack_constant_output.py and hack_memset.py rely on and the work pass's
# counters must catch (issue 24).
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
