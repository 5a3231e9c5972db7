# category: dynamo_internal_error
# about: a Dynamo handler returns a raw Python value; the interpreter's own assertion fires in symbolic_convert
import torch
from torch._dynamo.variables import dicts

_original_call_method = dicts.ConstDictVariable.call_method


def _call_method(self, tx, name, args, kwargs):
    if name == "items":
        # simulated regression: returns the underlying Python list instead of a VariableTracker
        return list(self.items.items())
    return _original_call_method(self, tx, name, args, kwargs)


dicts.ConstDictVariable.call_method = _call_method


def weighted_sum(losses):
    return sum(weight * value for weight, value in zip((1.0, 0.5), losses.values())) + sum(
        v.mean() for _, v in losses.items())


print(torch.compile(weighted_sum)({"ce": torch.rand(4), "l2": torch.rand(4)}))
