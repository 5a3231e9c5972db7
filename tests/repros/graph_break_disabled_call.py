# category: graph_break
# about: calling a torch.compiler.disable'd helper inside a fullgraph region
import torch


@torch.compiler.disable
def log_stats(x):
    return x.mean()


def f(x):
    y = x.relu()
    log_stats(y)
    return y + 1


torch.compile(f, fullgraph=True)(torch.randn(8))
