# category: accuracy
# about: the script's own `assert torch.allclose(eager, compiled)` fails (injected relu accuracy bug); no torch frame in the error
import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def head(x, w):
    return torch.relu(x @ w) * 2


x, w = torch.randn(8, 16), torch.randn(16, 4)
eager, compiled = head(x, w), torch.compile(head)(x, w)
assert torch.allclose(eager, compiled, atol=1e-4), f"differ by {(eager - compiled).abs().max():.4f}"
