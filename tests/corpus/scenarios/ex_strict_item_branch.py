# category: export_failure
# about: strict torch.export of a model that branches on x.max().item()
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if x.max().item() > 0:
            return x.relu()
        return x


ep = torch.export.export(Gate(), (torch.randn(4),), strict=True)
print(ep)
