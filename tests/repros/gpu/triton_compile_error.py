# category: triton_kernel_bug
# device: cuda
# about: Inductor emits a Triton kernel that Triton cannot compile (injected relu bug)
import torch

torch._inductor.config.triton.inject_relu_bug_TESTING_ONLY = "compile_error"


def f(x):
    return torch.relu(x) + 1


torch.compile(f)(torch.randn(1024, device="cuda"))
torch.cuda.synchronize()
