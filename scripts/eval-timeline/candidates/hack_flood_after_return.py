# Hostile: an honest ReLU, plus a thread that floods the GPU for 30 ms after every call returned,
# while the candidate holds no call (it would slow a reference timed at that moment).
import threading

import torch
import torch.nn as nn

_work = threading.Event()


def _flood():
    a = torch.randn(2048, 2048, device="cuda")
    while True:
        _work.wait()
        _work.clear()
        for _ in range(60):
            a = torch.matmul(a, a).clamp_(-1, 1)
        torch.cuda.synchronize()


threading.Thread(target=_flood, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.relu(x)
        _work.set()
        return out
