# category: backend_compiler_failed
# about: a small conv training step; Inductor's generated C++ for relu does not compile (injected bug)
import torch
import torch.nn as nn

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv1(x)))
        x = self.conv2(x)
        return self.fc(self.pool(x).flatten(1))


def train_step(model, opt, images, labels):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    opt.step()
    return loss


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
images = torch.randn(4, 3, 16, 16)
labels = torch.randint(0, 10, (4,))
step = torch.compile(train_step)
for _ in range(2):
    print(step(model, opt, images, labels).item())
