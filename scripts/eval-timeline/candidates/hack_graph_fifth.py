# Hostile: a CUDA graph of the real work, replayed on every fifth call only; the other calls
# return what the last replay wrote (right while the inputs do not change, as in a timing block).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = None
        self.key = None
        self.count = 0

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr())
        if key != self.key:
            self.key = key
            self.graph = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                self.out = torch.matmul(a, b)
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(self.graph):
                self.out = torch.matmul(a, b)
            self.count = 0
        if self.count % 5 == 0:
            self.graph.replay()
        self.count += 1
        return self.out
