# category: runtime_crash
# about: an MLP regressor's generated relu kernel raises when it runs (injected Inductor bug)
import torch
import torch.nn as nn

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "runtime_error"


class FeatureScaler:
    def __init__(self, data):
        self.mean = data.mean(dim=0)
        self.std = data.std(dim=0) + 1e-6

    def __call__(self, x):
        return (x - self.mean) / self.std


class Regressor(nn.Module):
    def __init__(self, features=12, hidden=32):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(features, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.layers(x).squeeze(-1)


def batches(data, targets, size):
    for start in range(0, len(data), size):
        yield data[start:start + size], targets[start:start + size]


torch.manual_seed(0)
data = torch.randn(64, 12)
targets = data[:, :3].sum(dim=1)
scale = FeatureScaler(data)
model = Regressor()
predict = torch.compile(model)
total = 0.0
with torch.no_grad():
    for x, y in batches(scale(data), targets, 16):
        total += ((predict(x) - y) ** 2).sum().item()
print("mse", total / len(data))
