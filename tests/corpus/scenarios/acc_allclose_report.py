# category: accuracy
# about: a script comparing torch.compile and eager outputs reports a mismatch and exits non-zero
import sys

import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
torch.manual_seed(0)


def gated(x, gate):
    return torch.relu(x) * torch.sigmoid(gate)


x, gate = torch.randn(64), torch.randn(64)
ref = gated(x, gate)
res = torch.compile(gated)(x, gate)
diff = (res - ref).abs()
print(f"eager vs compiled: max abs diff {diff.max().item():.4f}, "
      f"{int((diff > 1e-5).sum())}/{diff.numel()} elements differ")
if not torch.allclose(res, ref, atol=1e-5, rtol=1e-5):
    sys.exit("FAIL: torch.compile output does not match eager")
