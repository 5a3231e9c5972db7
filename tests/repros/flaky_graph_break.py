# category: graph_break
# about: fails about half of the time (random input decides whether the branch is traced)
# corpus: skip (flaky on purpose: its output is not a stable label)
import random

import torch


def f(x):
    if random.random() < 0.5:
        torch._dynamo.graph_break()
    return x + 1


torch.compile(f, fullgraph=True)(torch.randn(4))
