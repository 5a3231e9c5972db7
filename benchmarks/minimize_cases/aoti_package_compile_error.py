# category: aoti_failure
# about: an exported tabular MLP is packaged with AOTInductor; the generated C++ for relu does not compile (injected bug)
# written 2026-11-27 as held out; the reducer changed on 2026-11-28 with its results in view, so it no longer is
import os
import tempfile

import torch
import torch.nn as nn

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


class Standardize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, x):
        return (x - self.mean) / self.std


class TabularMLP(nn.Module):
    def __init__(self, features=10, hidden=24, outputs=2):
        super().__init__()
        data = torch.randn(256, features)
        self.scale = Standardize(data.mean(dim=0), data.std(dim=0))
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Dropout(0.1),
                                  nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, outputs)

    def forward(self, x):
        return self.head(self.body(self.scale(x)))


def package(model, example, directory):
    program = torch.export.export(model, (example,))
    path = os.path.join(directory, "tabular.pt2")
    return torch._inductor.aoti_compile_and_package(program, package_path=path)


torch.manual_seed(0)
model = TabularMLP().eval()
example = torch.randn(8, 10)
with tempfile.TemporaryDirectory() as directory:
    path = package(model, example, directory)
    runner = torch._inductor.aoti_load_package(path)
    print(runner(example).argmax(dim=-1).tolist())
