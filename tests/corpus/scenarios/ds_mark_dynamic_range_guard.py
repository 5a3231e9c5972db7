# category: dynamic_shapes
# about: mark_dynamic with min/max; a reshape adds guards that not every value in the range satisfies
import torch


@torch.compile(backend="eager")
def to_pairs(x):
    return x.reshape(-1, 12)


x = torch.randn(3, 8)
torch._dynamo.mark_dynamic(x, 0, min=2, max=16)
print(to_pairs(x).shape)
