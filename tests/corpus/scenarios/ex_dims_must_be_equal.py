# category: export_failure
# about: torch.export with two independent Dims on dimensions the model adds together (must be equal)
import torch
from torch.export import Dim


class Residual(torch.nn.Module):
    def forward(self, x, skip):
        return x + skip


ep = torch.export.export(
    Residual(),
    (torch.randn(4, 8), torch.randn(4, 8)),
    dynamic_shapes={"x": {0: Dim("batch")}, "skip": {0: Dim("skip_batch")}},
)
print(ep)
