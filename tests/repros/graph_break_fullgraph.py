# category: graph_break
# about: data-dependent `if` on a tensor under fullgraph=True
import torch


def f(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


torch.compile(f, fullgraph=True)(torch.randn(4))
