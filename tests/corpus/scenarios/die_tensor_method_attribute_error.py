# category: dynamo_internal_error
# about: an AttributeError inside Dynamo's TensorVariable.call_method (simulated regression) surfaces as InternalTorchDynamoError
import torch
from torch._dynamo.variables import tensor as tensor_vt

_original_call_method = tensor_vt.TensorVariable.call_method


def _call_method(self, tx, name, args, kwargs):
    if name == "transpose":
        source = None  # simulated regression: the source is dropped for view methods
        return source.reconstruct(tx)
    return _original_call_method(self, tx, name, args, kwargs)


tensor_vt.TensorVariable.call_method = _call_method


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return scores.softmax(-1) @ v


print(torch.compile(attention)(torch.randn(2, 4, 8), torch.randn(2, 4, 8), torch.randn(2, 4, 8)).shape)
