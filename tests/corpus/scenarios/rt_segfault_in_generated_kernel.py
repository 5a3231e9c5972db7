# category: runtime_crash
# about: a simulated Inductor C++ codegen regression emits a kernel that stores through a wild pointer; the compiled model segfaults when it runs
import faulthandler

import torch
from torch._inductor.codegen import cpp


def _relu_with_wild_store(x):
    # simulated codegen regression: the emitted relu also writes through a bad address
    return f"{x}; *reinterpret_cast<volatile char*>(16L) = 0"


cpp.CppOverrides.relu = staticmethod(_relu_with_wild_store)
cpp.CppVecOverrides.relu = staticmethod(_relu_with_wild_store)
faulthandler.enable()

model = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()))
with torch.no_grad():
    out = model(torch.randn(2, 8))
print("compiled output", tuple(out.shape))
