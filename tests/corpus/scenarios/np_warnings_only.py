# category: not_pt2
# about: a successful compiled run that prints only deprecation/user warnings
import warnings

import torch

warnings.simplefilter("always")
layer = torch.nn.utils.weight_norm(torch.nn.Linear(8, 8))
x = torch.tensor(torch.randn(4, 8))
with torch.autocast("cpu", dtype=torch.bfloat16):
    y = layer(x)
out = torch.compile(lambda t: t.float().sum(-1))(y)
print("result", out.shape)
