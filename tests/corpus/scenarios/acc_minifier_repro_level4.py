# category: accuracy
# about: TORCHDYNAMO_REPRO_AFTER=aot REPRO_LEVEL=4 accuracy checking catches a wrong compiled result
import os

os.environ["TORCHDYNAMO_REPRO_AFTER"] = "aot"
os.environ["TORCHDYNAMO_REPRO_LEVEL"] = "4"
os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"

import torch  # noqa: E402

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def block(x, w):
    return torch.relu(x @ w) + 1


print(torch.compile(block)(torch.randn(4, 8), torch.randn(8, 8)))
