# category: not_pt2
# about: a compiled function that works: nothing to reproduce
import torch


@torch.compile
def f(x):
    return torch.sin(x) + torch.cos(x)


print(f(torch.randn(4)).shape)
