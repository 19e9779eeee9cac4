"""Returns a torch.Tensor subclass."""

import torch


class Lazy(torch.Tensor):
    pass


class ModelNew(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x)).as_subclass(Lazy)
