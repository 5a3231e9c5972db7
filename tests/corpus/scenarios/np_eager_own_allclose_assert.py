# category: not_pt2
# about: an eager-only float16 check with the script's own `assert torch.allclose(...)`; no compile involved
import torch

torch.manual_seed(0)
x = torch.rand(4096) * 100
reference = x.double().cumsum(0)
assert torch.allclose(x.half().cumsum(0).double(), reference, rtol=1e-4), "float16 cumsum drifted"
