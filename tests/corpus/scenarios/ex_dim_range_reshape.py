# category: export_failure
# about: torch.export with Dim(min, max) on a length the model reshapes in pairs (not all values are valid)
import torch
from torch.export import Dim


class Pairs(torch.nn.Module):
    def forward(self, tokens):
        return tokens.view(-1, 2).sum(-1)


seq = Dim("seq", min=1, max=512)
ep = torch.export.export(Pairs(), (torch.randn(16),), dynamic_shapes={"tokens": {0: seq}})
