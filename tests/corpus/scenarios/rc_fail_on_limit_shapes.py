# category: recompilation
# about: static-shape compile of a function fed growing batch sizes; fail_on_recompile_limit_hit raises
import torch

torch._dynamo.config.recompile_limit = 4
torch._dynamo.config.fail_on_recompile_limit_hit = True
torch._logging.set_logs(recompiles=True)


@torch.compile(dynamic=False, backend="eager")
def collate(batch):
    return torch.nn.functional.pad(batch, (0, 1)).sum(0)


for n in range(1, 10):
    collate(torch.randn(n, 4))
print("finished")
