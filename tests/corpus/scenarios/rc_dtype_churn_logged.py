# category: recompilation
# about: TORCH_LOGS=recompiles shows a recompile per input dtype until the cache limit warning
import torch

torch._logging.set_logs(recompiles=True)
torch._dynamo.config.recompile_limit = 4


@torch.compile(backend="eager")
def mix(a, b):
    return a * 0.5 + b.to(a.dtype) * 0.5


b = torch.randn(8)
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int16):
    mix(torch.ones(8, dtype=dtype), b)
print("ok")
