# category: recompilation
# about: recompile limit hit without a hard failure: a warning, then eager fallback
import torch

torch._dynamo.config.recompile_limit = 2
torch._logging.set_logs(recompiles=True)


@torch.compile(dynamic=False)
def scale(x, factor):
    return x * factor


for factor in range(5):
    scale(torch.randn(3), factor)
print("done")
