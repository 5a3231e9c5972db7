# category: recompilation
# about: a denoiser keeps its diffusion step as a module int attribute; every step is a new guard until the limit fails the run
# written 2026-11-27 as held out; the reducer changed on 2026-11-28 with its results in view, so it no longer is
import math

import torch
import torch.nn as nn

torch._dynamo.config.recompile_limit = 3
torch._dynamo.config.fail_on_recompile_limit_hit = True


def timestep_embedding(step, dim):
    freqs = torch.exp(-math.log(10000.0) * torch.arange(dim // 2) / (dim // 2))
    angles = step * freqs
    return torch.cat([angles.sin(), angles.cos()])


class Denoiser(nn.Module):
    def __init__(self, dim=16, steps=8):
        super().__init__()
        self.inp = nn.Linear(dim, 2 * dim)
        self.mid = nn.Linear(2 * dim, 2 * dim)
        self.out = nn.Linear(2 * dim, dim)
        self.dim = dim
        self.steps = steps
        self.step = 0

    def forward(self, x):
        h = torch.nn.functional.silu(self.inp(x) + timestep_embedding(self.step, 2 * self.dim))
        h = h + torch.nn.functional.silu(self.mid(h))
        self.step += 1
        return x - self.out(h) / self.steps


def sample(model, shape, steps):
    x = torch.randn(shape)
    for _ in range(steps):
        x = model(x)
    return x


torch.manual_seed(0)
model = Denoiser().eval()
denoise = torch.compile(model, backend="eager")
with torch.no_grad():
    samples = sample(denoise, (4, 16), steps=8)
print(samples.norm(dim=-1))
