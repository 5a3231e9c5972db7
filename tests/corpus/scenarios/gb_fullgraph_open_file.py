# category: graph_break
# about: the builtin open() inside a fullgraph=True function (Dynamo cannot trace the builtin)
import torch


def scaled(x, path="/proc/self/stat"):
    with open(path) as fh:
        fh.read()
    return x * 2


print(torch.compile(scaled, fullgraph=True)(torch.randn(4)))
