# category: aot_autograd_failure
# about: the min-cut partitioner drops every saved activation (simulated regression) and its graph extraction asserts
import torch
import torch._functorch.partitioners as partitioners

_original_choose = partitioners.choose_saved_values_set


def _choose_saved_values_set(*args, **kwargs):
    _original_choose(*args, **kwargs)
    return []  # simulated regression: the chosen set is lost


partitioners.choose_saved_values_set = _choose_saved_values_set

model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
out = torch.compile(model)(torch.randn(4, 8))
out.sum().backward()
