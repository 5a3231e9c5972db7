# category: not_pt2
# about: an eager-only numerical check (float16 vs float64 reduction) fails assert_close; no compile involved
import torch

torch.manual_seed(0)
x = torch.rand(4096) * 100
ref = x.double().cumsum(0)
res = x.half().cumsum(0)
torch.testing.assert_close(res.double(), ref)
