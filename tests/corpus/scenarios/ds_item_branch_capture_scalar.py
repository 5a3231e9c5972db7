# category: dynamic_shapes
# about: dynamic=True + capture_scalar_outputs: branching on an .item() value cannot be guarded (unbacked symbol)
import torch

torch._dynamo.config.capture_scalar_outputs = True


@torch.compile(dynamic=True, fullgraph=True)
def route(x, counts):
    n = counts.sum().item()
    if n > x.shape[0]:
        return x.repeat(2, 1)
    return x


print(route(torch.randn(4, 3), torch.tensor([1, 2, 3])).shape)
