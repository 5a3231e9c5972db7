# category: graph_break
# about: print() inside a compiled function: a logged graph break, no error
import torch

torch._logging.set_logs(graph_breaks=True)


def f(x):
    x = torch.sin(x)
    print("tracing")
    return x * 2


print(torch.compile(f)(torch.randn(4)).shape)
