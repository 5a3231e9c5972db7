# category: export_failure
# about: a dimension exported as dynamic is specialized by the model
import torch
from torch.export import Dim


class M(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] == 4:
            return x + 1
        return x - 1


batch = Dim("batch")
torch.export.export(M(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: batch}})
