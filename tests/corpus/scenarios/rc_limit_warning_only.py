# category: recompilation
# about: the recompile limit is hit without fail_on_recompile_limit_hit: a warning, then eager fallback
import torch

torch._dynamo.config.recompile_limit = 3


@torch.compile(dynamic=False)
def scale(x, n):
    return (x * n).relu()


for n in range(8):
    scale(torch.randn(8), torch.randn(n + 1).shape[0])
print("all steps ran")
