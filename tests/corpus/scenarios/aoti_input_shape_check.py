# category: aoti_failure
# about: an AOTInductor package compiled for batch 2 is run with batch 3; AOTI_RUNTIME_CHECK_INPUTS rejects it
import os

os.environ["AOTI_RUNTIME_CHECK_INPUTS"] = "1"

import torch  # noqa: E402


class Ranker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


ep = torch.export.export(Ranker(), (torch.randn(2, 16),))
path = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.abspath("ranker.pt2"))
runner = torch._inductor.aoti_load_package(path)
print("batch 2:", runner(torch.randn(2, 16)).shape)
print("batch 3:", runner(torch.randn(3, 16)).shape)
