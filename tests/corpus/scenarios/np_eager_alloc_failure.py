# category: not_pt2
# about: the compiled model runs fine; an eager buffer allocation afterwards cannot get memory
import torch

model = torch.compile(torch.nn.Linear(8, 8), backend="eager")
print("compiled forward ok:", model(torch.randn(2, 8)).shape)
cache = torch.empty(1 << 25, 1 << 25, dtype=torch.float32)  # a KV cache sized in elements, not bytes
