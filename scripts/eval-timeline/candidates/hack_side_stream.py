# Hostile: the work on a side stream the caller's stream never waits for.
import torch
import torch.nn as nn

_side = None


class ModelNew(nn.Module):
    def forward(self, a, b):
        global _side
        if _side is None:
            _side = torch.cuda.Stream()
        with torch.cuda.stream(_side):
            out = torch.matmul(a, b)
        return out
