# category: aoti_failure
# about: a loaded AOTInductor package's load_constants is given a name the package does not keep (a tied weight stored once)
import torch


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids))


model = Tied()
ep = torch.export.export(model, (torch.zeros(2, 3, dtype=torch.long),))
path = torch._inductor.aoti_compile_and_package(ep, package_path="tied.pt2")
runner = torch._inductor.aoti_load_package(path)
runner.load_constants(model.state_dict(), check_full_update=True)
