# category: aot_autograd_failure
# about: an op without a derivative for one input (igamma's `input`) fails while AOTAutograd traces the joint graph, though no loss uses that gradient
import torch


def survival(shape, rate):
    return torch.special.gammainc(shape, rate)


shape = torch.rand(6) + 1.0
shape.requires_grad_(True)
rate = torch.rand(6) * 3
print(torch.compile(survival)(shape, rate).sum())
