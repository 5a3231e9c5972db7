# category: export_failure
# about: torch.export rejects a dynamic_shapes dict whose keys do not match the forward argument names
import torch
from torch.export import Dim


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, features, mask):
        return self.fc(features) * mask


batch = Dim("batch", min=1, max=1024)
ep = torch.export.export(
    Classifier(),
    (torch.randn(4, 8), torch.ones(4, 1)),
    dynamic_shapes={"input": {0: batch}, "mask": {0: batch}},
)
