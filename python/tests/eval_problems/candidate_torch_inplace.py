"""Right output, then zeroes its input (on CUDA the input is the trusted worker's handout)."""

import torch


class ModelNew(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.relu(self.linear(x))
        x.zero_()
        return y
