# category: dynamic_shapes
# about: branching on a value read with .item() cannot be guarded under fullgraph=True
import torch


@torch.compile(fullgraph=True)
def f(x):
    if x.sum().item() > 0:
        return x + 1
    return x - 1


f(torch.randn(4))
