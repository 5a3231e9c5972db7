# category: export_failure
# about: a batch dimension exported as dynamic is specialized by a reshape in the model
import torch
import torch.nn as nn
from torch.export import Dim


class PatchEmbed(nn.Module):
    def __init__(self, patch=4, dim=16):
        super().__init__()
        self.proj = nn.Linear(patch * patch, dim)
        self.patch = patch

    def forward(self, images):
        b, h, w = images.shape
        patches = images.reshape(b, h // self.patch, self.patch, w // self.patch, self.patch)
        patches = patches.permute(0, 1, 3, 2, 4).reshape(b, -1, self.patch * self.patch)
        return self.proj(patches)


class Tagger(nn.Module):
    def __init__(self, dim=16, tags=3):
        super().__init__()
        self.embed = PatchEmbed(dim=dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, tags)

    def forward(self, images):
        tokens = self.embed(images)
        tokens = tokens + torch.sigmoid(self.mix(tokens))
        pooled = tokens.reshape(4, -1, tokens.shape[-1]).mean(dim=1)
        return self.head(pooled)


batch = Dim("batch", min=2, max=64)
images = torch.randn(4, 8, 8)
program = torch.export.export(Tagger(), (images,), dynamic_shapes={"images": {0: batch}})
print(program)
