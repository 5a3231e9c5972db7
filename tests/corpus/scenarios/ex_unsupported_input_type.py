# category: export_failure
# about: torch.export of a forward that takes a plain config object as input (not a pytree type)
import torch


class Config:
    temperature = 0.7


class Sampler(torch.nn.Module):
    def forward(self, logits, cfg):
        return (logits / cfg.temperature).softmax(-1)


ep = torch.export.export(Sampler(), (torch.randn(2, 10), Config()))
