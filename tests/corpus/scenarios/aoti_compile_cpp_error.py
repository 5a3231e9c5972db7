# category: aoti_failure
# about: aoti_compile_and_package fails: the AOTInductor C++ build hits a compile error (injected relu bug)
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


class Ranker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


ep = torch.export.export(Ranker(), (torch.randn(2, 16),))
path = torch._inductor.aoti_compile_and_package(ep, package_path="ranker.pt2")
print(path)
