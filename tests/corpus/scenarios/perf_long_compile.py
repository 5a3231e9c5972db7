# category: performance
# about: the first call of a compiled 48-block MLP spends tens of seconds compiling; torch's compile-time report (compile_times) shows it; no error
import os

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
compiled = torch.compile(model)
compiled(torch.randn(8, 32))
print(torch._dynamo.utils.compile_times())
