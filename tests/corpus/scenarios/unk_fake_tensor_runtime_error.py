# category: unknown
# about: a wrong meta kernel (simulated regression: mm's fake output is one column too wide) makes Dynamo's fake-tensor propagation fail on code that runs in eager (TorchRuntimeError)
import torch
from torch._C import DispatchKey

mm = torch.ops.aten.mm.default
_original_mm_meta = mm.py_kernels[DispatchKey.Meta]


def _mm_meta_off_by_one(a, b, *args, **kwargs):
    out = _original_mm_meta(a, b, *args, **kwargs)
    return out.new_empty((out.shape[0], out.shape[1] + 1))  # simulated regression in mm's meta kernel


mm.py_kernels[DispatchKey.Meta] = _mm_meta_off_by_one
mm._dispatch_cache.clear()


def project(a, w, bias):
    return (a @ w + bias).relu()


a, w, bias = torch.randn(3, 4), torch.randn(4, 5), torch.randn(5)
print("eager", tuple(project(a, w, bias).shape))
print("compiled", tuple(torch.compile(project)(a, w, bias).shape))
