# category: export_failure
# about: torch.export of a normalizing encoder whose forward branches on a tensor's value
import torch
import torch.nn as nn


class Normalize(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        if x.abs().max() > 1:
            x = x / (x.norm(dim=-1, keepdim=True) + self.eps)
        return x


class Encoder(nn.Module):
    def __init__(self, dim=24, hidden=48, depth=3):
        super().__init__()
        self.inp = nn.Linear(dim, hidden)
        self.layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(depth)])
        self.norm = Normalize()
        self.out = nn.Linear(hidden, dim)

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        for layer in self.layers:
            h = h + torch.relu(layer(h))
        return self.out(self.norm(h))


def example_inputs(batch=4, dim=24):
    return (torch.randn(batch, dim),)


model = Encoder().eval()
program = torch.export.export(model, example_inputs())
print(program.graph_module.code)
