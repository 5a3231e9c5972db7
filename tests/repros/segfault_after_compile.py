# category: runtime_crash
# about: the process segfaults right after a compiled call
import ctypes

import torch

out = torch.compile(lambda x: x * 2)(torch.randn(4))
ctypes.string_at(0)
