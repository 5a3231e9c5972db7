# category: not_pt2
# about: a plain eager shape mismatch; torch.compile is never reached
import torch

model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(4, 5))
compiled = torch.compile(model)
model(torch.randn(2, 4))
