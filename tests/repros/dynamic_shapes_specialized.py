# category: dynamic_shapes
# about: a dimension marked dynamic gets specialized by a shape check in the compiled code
import torch


@torch.compile(fullgraph=True)
def g(x):
    if x.shape[0] == 4:
        return x + 1
    return x - 1


x = torch.randn(4)
torch._dynamo.mark_dynamic(x, 0)
g(x)
