# category: performance
# about: first call of a compiled 48-block MLP takes tens of seconds vs milliseconds eager; no error
import os
import time

os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"

import torch  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 2 * d)
        self.fc2 = torch.nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


model = torch.nn.Sequential(*[Block(32) for _ in range(48)])
x = torch.randn(8, 32)
t0 = time.perf_counter()
model(x)
eager_s = time.perf_counter() - t0
compiled = torch.compile(model)
t0 = time.perf_counter()
compiled(x)
compile_s = time.perf_counter() - t0
print(f"eager first call: {eager_s * 1000:.1f} ms")
print(f"compiled first call: {compile_s:.1f} s ({compile_s / eager_s:.0f}x)")
print(torch._dynamo.utils.compile_times())
