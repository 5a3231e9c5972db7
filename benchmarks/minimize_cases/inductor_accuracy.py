# category: accuracy
# about: a compiled attention-pooling head disagrees with eager (injected relu accuracy bug)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


class AttentionPool(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.score = nn.Linear(dim, 1)

    def forward(self, x):
        weights = F.softmax(self.score(x), dim=1)
        return (weights * x).sum(dim=1)


class Head(nn.Module):
    def __init__(self, dim=16, hidden=32, classes=4):
        super().__init__()
        self.pool = AttentionPool(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, classes)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        h = torch.relu(self.fc1(self.pool(x)))
        return self.fc2(self.norm(h))


def check(model, inputs):
    expected = model(inputs)
    actual = torch.compile(model)(inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
    return actual


torch.manual_seed(0)
model = Head().eval()
inputs = torch.randn(3, 10, 16)
with torch.no_grad():
    out = check(model, inputs)
print(out.argmax(dim=-1))
