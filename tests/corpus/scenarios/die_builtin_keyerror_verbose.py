# category: dynamo_internal_error
# about: a KeyError inside BuiltinVariable.call_function with TORCHDYNAMO_VERBOSE=1 (full internal stack)
import os

os.environ["TORCHDYNAMO_VERBOSE"] = "1"

import torch  # noqa: E402
from torch._dynamo.variables import builtin  # noqa: E402

_original_call_function = builtin.BuiltinVariable.call_function


def _call_function(self, tx, args, kwargs):
    if self.fn is len:
        handlers = {}
        return handlers[self.fn](tx, *args)  # simulated regression: handler table not populated
    return _original_call_function(self, tx, args, kwargs)


builtin.BuiltinVariable.call_function = _call_function


def pad_to_batch(xs):
    return torch.stack(xs) * len(xs)


print(torch.compile(pad_to_batch)([torch.randn(3), torch.randn(3)]).shape)
