# category: runtime_crash
# about: the process segfaults right after the compiled model returns (faulthandler shows the signal)
import ctypes
import faulthandler

import torch

faulthandler.enable()

model = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()))
with torch.no_grad():
    out = model(torch.randn(2, 8))
print("compiled output", tuple(out.shape))
ctypes.string_at(0)
