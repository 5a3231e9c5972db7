# category: backend_compiler_failed
# about: Inductor's C++ codegen emits code that does not compile (injected relu bug)
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


def f(x):
    return torch.relu(x) + 1


torch.compile(f)(torch.randn(8))
