# category: export_failure
# about: strict torch.export of a model whose forward calls time.perf_counter() (Dynamo cannot trace it)
import time

import torch


class Timed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        t0 = time.perf_counter()
        y = self.fc(x)
        self.elapsed = time.perf_counter() - t0
        return y


ep = torch.export.export(Timed(), (torch.randn(2, 4),), strict=True)
