# category: graph_break
# about: torch._dynamo.graph_break() under fullgraph=True
import torch


def f(x):
    x = x * 2
    torch._dynamo.graph_break()
    return x + 1


torch.compile(f, fullgraph=True)(torch.randn(4))
