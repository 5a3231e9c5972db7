# category: backend_compiler_failed
# about: an Inductor lowering fails an internal assertion (the cat lowering is patched to pass a wrong dim)
import torch
from torch._inductor import lowering

aten = torch.ops.aten
_original_cat = lowering.lowerings[aten.cat.default]


def _cat_with_off_by_two_dim(inputs, dim=0):
    # simulated regression in the lowering: dim normalization applied twice
    return _original_cat(inputs, dim + 2)


lowering.lowerings[aten.cat.default] = _cat_with_off_by_two_dim


def features(x, y):
    return torch.cat([x.sin(), y.cos()], dim=1)


print(torch.compile(features)(torch.randn(4, 8), torch.randn(4, 8)).shape)
