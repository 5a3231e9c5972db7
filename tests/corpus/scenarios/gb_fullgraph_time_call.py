# category: graph_break
# about: fullgraph=True model whose forward calls time.time() (a C builtin Dynamo cannot trace)
import time

import torch


class Throttled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        start = time.time()
        y = self.proj(x).relu()
        self.last_latency = time.time() - start
        return y


model = torch.compile(Throttled(), fullgraph=True)
print(model(torch.randn(2, 16)).shape)
