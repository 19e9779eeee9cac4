"""A KernelBench-format PyTorch problem: relu(linear(x)), weights drawn at construction."""

import torch

BATCH, IN_FEATURES, OUT_FEATURES = 64, 128, 256


class Model(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
