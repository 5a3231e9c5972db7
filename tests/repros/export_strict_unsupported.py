# category: export_failure
# about: strict torch.export of a module that calls a disabled helper
import torch


@torch.compiler.disable
def side_effect(x):
    return x.sum()


class M(torch.nn.Module):
    def forward(self, x):
        side_effect(x)
        return x * 2


torch.export.export(M(), (torch.randn(4),), strict=True)
