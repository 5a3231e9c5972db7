# category: graph_break
# about: TORCH_LOGS=graph_breaks shows a data-dependent branch splitting the graph; no exception
import torch

torch._logging.set_logs(graph_breaks=True)


def clip_if_large(x):
    x = x * 3
    if x.abs().max() > 1:
        x = x / x.abs().max()
    return x.sin()


fn = torch.compile(clip_if_large)
print(fn(torch.randn(16)).shape)
print(fn(torch.randn(16)).shape)
