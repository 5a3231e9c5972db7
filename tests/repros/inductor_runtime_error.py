# category: runtime_crash
# about: the generated C++ kernel raises when it runs (injected relu bug)
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "runtime_error"


def f(x):
    return torch.relu(x) + 1


torch.compile(f)(torch.randn(8))
