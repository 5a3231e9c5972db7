# category: graph_break
# about: print() under fullgraph=True cannot be traced
import torch


def f(x):
    x = torch.sin(x)
    print("value", x)
    return x * 2


torch.compile(f, fullgraph=True)(torch.randn(4))
