# category: dynamic_shapes
# about: mark_dynamic on the feature dim, which nn.Linear's weight forces to a constant (ConstraintViolationError)
import torch

proj = torch.nn.Linear(64, 32)


@torch.compile
def encode(x):
    return proj(x).relu()


x = torch.randn(4, 64)
torch._dynamo.mark_dynamic(x, 0)
torch._dynamo.mark_dynamic(x, 1)
print(encode(x).shape)
