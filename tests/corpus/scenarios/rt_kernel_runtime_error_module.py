# category: runtime_crash
# about: the compiled C++ kernel raises when the compiled module runs (injected relu runtime bug)
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "runtime_error"


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.fc(x)) + 1


head = torch.compile(Head())
with torch.no_grad():
    for step in range(3):
        out = head(torch.randn(4, 16))
        print("step", step, out.shape)
