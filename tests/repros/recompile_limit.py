# category: recompilation
# about: a changing Python scalar recompiles until fail_on_recompile_limit_hit raises
import torch

torch._dynamo.config.recompile_limit = 2
torch._dynamo.config.fail_on_recompile_limit_hit = True


@torch.compile(dynamic=False)
def scale(x, factor):
    return x * factor


for factor in range(6):
    scale(torch.randn(3), factor)
