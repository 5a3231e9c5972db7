# category: recompilation
# about: a module attribute incremented every forward guards every compile; the limit raises
import torch

torch._dynamo.config.recompile_limit = 2
torch._dynamo.config.fail_on_recompile_limit_hit = True


class Scheduled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.step = 0

    def forward(self, x):
        self.step += 1
        warmup = min(1.0, self.step / 100)
        return self.lin(x) * warmup


model = torch.compile(Scheduled(), backend="eager")
for _ in range(5):
    model(torch.randn(2, 4))
