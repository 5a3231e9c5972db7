# category: dynamo_internal_error
# about: a crash inside Dynamo's tracer (simulated by breaking a VariableTracker method)
import torch
from torch._dynamo.variables import builtin


def broken_call_function(self, tx, args, kwargs):
    raise KeyError("missing handler")


builtin.BuiltinVariable.call_function = broken_call_function


def f(x):
    return x + len([x, x])


torch.compile(f)(torch.randn(4))
