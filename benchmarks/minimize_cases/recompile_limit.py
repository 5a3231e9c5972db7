# category: recompilation
# about: a warm-up schedule passes a new Python float every step; dynamo recompiles until the limit fails the run
import torch
import torch.nn as nn

torch._dynamo.config.recompile_limit = 2
torch._dynamo.config.fail_on_recompile_limit_hit = True


class Net(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)
        self.act = nn.GELU()

    def forward(self, x, temperature):
        return self.fc2(self.act(self.fc1(x))) / temperature


def warmup_temperatures(steps, start=2.0, end=1.0):
    return [start + (end - start) * step / max(steps - 1, 1) for step in range(steps)]


def train(model, steps=6):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step_fn = torch.compile(model, backend="eager", dynamic=False)
    losses = []
    for temperature in warmup_temperatures(steps):
        x = torch.randn(4, 16)
        loss = step_fn(x, temperature).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
print(train(Net()))
