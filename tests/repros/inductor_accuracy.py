# category: accuracy
# about: compiled relu is wrong (injected accuracy bug), checked against eager
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def f(x):
    return torch.relu(x) + 1


x = torch.randn(8)
torch.testing.assert_close(torch.compile(f)(x), f(x))
