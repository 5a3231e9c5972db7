# category: export_failure
# about: torch.export of a module with a data-dependent branch
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


torch.export.export(Gate(), (torch.randn(4),))
